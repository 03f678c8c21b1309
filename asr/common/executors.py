"""Running independent calls on an executor: a dask.distributed.Client (many machines) or any
concurrent.futures.Executor (threads or processes here). Used by asr.sweep (batches of samples)
and asr.rl.train_many (training runs)."""

import concurrent.futures


def completed(executor, fn, arg_tuples):
    """Submit fn(*arg_tuples[k]) for every k to `executor`; yield (k, result) as the calls
    complete. A failed call raises its exception here, and every call not finished yet is
    cancelled (also when the caller stops iterating)."""
    dask = hasattr(executor, "scatter") and hasattr(executor, "gather")
    if not dask and not isinstance(executor, concurrent.futures.Executor):
        raise TypeError(
            f"executor: expected a dask.distributed.Client or a "
            f"concurrent.futures.Executor, got {type(executor).__name__}"
        )
    if dask:
        from distributed import as_completed

        futures = {executor.submit(fn, *args, pure=False): k for k, args in enumerate(arg_tuples)}
    else:
        as_completed = concurrent.futures.as_completed
        futures = {executor.submit(fn, *args): k for k, args in enumerate(arg_tuples)}
    try:
        for fut in as_completed(list(futures)):
            yield futures[fut], fut.result()
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
