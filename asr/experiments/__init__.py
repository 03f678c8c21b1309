"""Reproductions of the seed papers' published experiments (shared/papers), one module per paper:
seedNNN.py, each with run() and main(out_dir), runnable as python -m asr.experiments.seedNNN."""
