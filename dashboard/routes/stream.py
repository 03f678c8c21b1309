"""WebSocket /ws/stream: a figure on connect, then extend frames at update_hz, state / ilc /
error messages. Client messages (control, push, ping) are answered; garbage gets an error
message and the stream goes on."""
import asyncio
import json

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import TypeAdapter, ValidationError

from dashboard import models
from dashboard.runner import Busy, ControlError, NotFound

router = APIRouter(tags=["stream"])
_message = TypeAdapter(models.WSMessage)


def _validation_text(exc):
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e.get("loc", ()))
        parts.append(f"{loc}: {e.get('msg')}" if loc else e.get("msg", ""))
    return "; ".join(parts)


async def _handle(websocket, runner, text):
    """The reply to one client message (a dict) or None."""
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        return {"type": "error", "message": f"not JSON: {exc}"}
    if not isinstance(raw, dict) or "type" not in raw:
        return {"type": "error", "message": "expected a JSON object with a 'type' "
                "(control, push, ping)"}
    try:
        msg = _message.validate_python(raw)
    except ValidationError as exc:
        return {"type": "error", "message": f"bad {raw.get('type')!r} message: "
                f"{_validation_text(exc)}"}
    if isinstance(msg, models.WSPing):
        return {"type": "pong"}
    body = msg.model_dump(exclude_none=True, exclude={"type"})
    try:
        if isinstance(msg, models.WSPush):
            await asyncio.wrap_future(runner.submit(lambda r: r.do_push(body)))
            return None
        if "params" in body:
            body["params"] = {j: {k: v for k, v in g.items() if v is not None}
                              for j, g in body["params"].items()}
        await asyncio.wrap_future(runner.submit(lambda r: r.control(body)))
    except (ControlError, NotFound, Busy, ValueError, TypeError) as exc:
        return {"type": "error", "message": str(exc)}
    return None  # the runner broadcasts the new state


@router.websocket("/ws/stream")
async def stream(websocket: WebSocket):
    runner = websocket.app.state.runner
    await websocket.accept()
    sub = runner.subscribe(asyncio.get_running_loop())

    async def send():
        try:
            while True:
                _, text = await sub.get()
                await websocket.send_text(text)
        except (WebSocketDisconnect, RuntimeError):  # closed while sending
            pass

    sender = asyncio.ensure_future(send())
    try:
        # the handler itself reads client messages, so it returns as soon as the client leaves
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None and message.get("bytes") is not None:
                reply = {"type": "error", "message": "binary messages are not supported; send "
                         "JSON text"}
            else:
                reply = await _handle(websocket, runner, text)
            if reply is not None:
                sub.put(reply["type"], json.dumps(reply))
    except (WebSocketDisconnect, asyncio.CancelledError):
        pass  # client gone, or the server is shutting down
    finally:
        sender.cancel()
        runner.unsubscribe(sub)
