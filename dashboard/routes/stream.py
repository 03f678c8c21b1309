"""WebSocket /ws/stream: a figure on connect, then extend frames at update_hz, state / ilc /
error messages. Client messages (control, push, ping) are answered; garbage gets an error
message and the stream goes on, whatever it holds (NaN, Infinity, a 5000-digit number, deep
nesting: an error naming what is wrong, never a closed stream). Only pages that pass
dashboard/security.py get here. A message larger than Settings.max_message_bytes closes the
connection (1009); JSON nested deeper than max_json_depth or with numbers longer than Python
parses gets an error unparsed. A client sending more than Settings.ws_messages_per_s messages
(after a burst of ws_message_burst) has the excess dropped unread and is told once with an error
message; one that goes on flooding is closed with 1008 (limits.MessageBudget). Each client has
its own bounded queue (subscribers.Subscriber) and its own sender task, so a slow client loses
frames but never holds up the others."""

import asyncio
import functools
import json
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import TypeAdapter, ValidationError

from .. import models
from ..errors import public_message, short, validation_text
from ..ilc import Busy
from ..limits import MessageBudget, json_problem, size_problem
from ..ranges import schema_range, with_ranges
from ..references import ControlError
from ..robots import NotFound
from ..routes.api import given_fields

log = logging.getLogger(__name__)
router = APIRouter(tags=["stream"])
_message = TypeAdapter(models.WSMessage)
_message_schema = functools.cache(_message.json_schema)  # the messages' ranges, for errors
WS_MESSAGE_TOO_BIG = 1009
WS_POLICY_VIOLATION = 1008


async def _handle(runner, settings, text):
    """The reply to one client message (a dict) or None."""
    problem = json_problem(text.encode(), settings.max_json_depth)
    if problem:
        return {"type": "error", "message": f"message: {problem}"}
    try:
        raw = json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return {"type": "error", "message": public_message(f"not JSON: {exc}")}
    if not isinstance(raw, dict) or "type" not in raw:
        return {
            "type": "error",
            "message": "expected a JSON object with a 'type' (control, push, ping)",
        }
    try:
        msg = _message.validate_python(raw)
    except ValidationError as exc:
        errors = with_ranges(exc.errors(), lambda loc: schema_range(_message_schema(), loc))
        return {
            "type": "error",
            "message": f"bad {short(raw.get('type'))} message: {validation_text(errors)}",
        }
    if isinstance(msg, models.WSPing):
        return {"type": "pong"}
    try:
        if isinstance(msg, models.WSPush):
            body = msg.model_dump(exclude={"type"})
            await asyncio.wrap_future(runner.submit(lambda r: r.do_push(body)))
            return None
        body = given_fields(msg)
        body.pop("type")
        await asyncio.wrap_future(runner.submit(lambda r: r.control(body)))
    except (ControlError, NotFound, Busy, ValueError, TypeError, ArithmeticError) as exc:
        return {"type": "error", "message": public_message(exc)}
    return None  # the runner broadcasts the new state


async def _reply(runner, settings, text):
    """_handle's reply; an unexpected failure is an error message too (logged), so that no
    message a client sends ends its stream."""
    try:
        return await _handle(runner, settings, text)
    except Exception as exc:  # noqa: BLE001 - answered, the stream goes on
        log.exception("stream message failed")
        return {
            "type": "error",
            "message": public_message(f"message failed: {type(exc).__name__}: {exc}"),
        }


@router.websocket("/ws/stream")
async def stream(websocket: WebSocket):
    runner, settings = websocket.app.state.runner, websocket.app.state.settings
    await websocket.accept()
    sub = runner.subscribe(asyncio.get_running_loop())

    async def send():
        try:
            while True:
                _, text = await sub.get()
                await websocket.send_text(text)
        except (WebSocketDisconnect, RuntimeError, OSError):  # closed while sending
            pass

    sender = asyncio.ensure_future(send())
    budget = MessageBudget(settings.ws_messages_per_s, settings.ws_message_burst)
    try:
        # the handler itself reads client messages, so it returns as soon as the client leaves
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            if not budget.take():
                if budget.flooding():
                    await websocket.close(WS_POLICY_VIOLATION, budget.problem()[:120])
                    break
                if budget.dropped == 1:
                    sub.put("error", json.dumps({"type": "error", "message": budget.problem()}))
                continue
            text, data = message.get("text"), message.get("bytes")
            too_big = size_problem(
                len(text if text is not None else data or b""),
                settings.max_message_bytes,
                "message",
            )
            if too_big:  # normally refused by the server before it gets here
                await websocket.close(WS_MESSAGE_TOO_BIG, too_big)
                break
            if text is None and data is not None:
                reply = {
                    "type": "error",
                    "message": "binary messages are not supported; send JSON text",
                }
            else:
                reply = await _reply(runner, settings, text)
            if reply is not None:
                sub.put(reply["type"], json.dumps(reply))
    except (WebSocketDisconnect, asyncio.CancelledError):
        pass  # client gone, or the server is shutting down
    finally:
        sender.cancel()
        runner.unsubscribe(sub)
