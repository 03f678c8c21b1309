"""Error texts the dashboard sends to clients: they name the parameter and the valid range, echo
at most a short piece of what was sent (a 1 MB value is not sent back) and never a server path
(a client must not learn the server's file layout from error messages), and can always be sent:
text UTF-8 cannot carry (a lone surrogate, which JSON's "\\ud800" escape makes) is escaped."""

import json
import re

from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from .ranges import request_schema, schema_range, with_ranges

MAX_ECHO = 80  # characters of a client's value repeated in an error
MAX_MESSAGE = 1000  # characters of one error message

# an absolute POSIX path of two or more parts (not an API route): replaced by its last part
_ABS_PATH = re.compile(r"(?<![\w.:/~-])/(?!api/|ws/|static/)[^\s'\"(),;:]*/([^\s'\"(),;:/]*)")


def printable(text):
    """`text` with what UTF-8 cannot encode (lone surrogates) written as a \\udXXXX escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _printable_tree(value):
    """A JSON-able value with every string (keys too) passed through printable()."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_printable_tree(k): _printable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_printable_tree(v) for v in value]
    return value


class SafeJSONResponse(JSONResponse):
    """The app's JSON answers: a body holding text UTF-8 cannot encode (input echoed back) is
    sent with that text escaped, not failed with UnicodeEncodeError (a 500). The escape pass
    runs only then, so large answers (the scene) cost nothing more."""

    def render(self, content):
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return super().render(_printable_tree(content))


def _cut(text, limit):
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def short(value, limit=MAX_ECHO):
    """repr(value), cut to `limit` characters."""
    return _cut(repr(value), limit)


def public_message(text, limit=MAX_MESSAGE):
    """`text` (an exception or a string) without server paths, cut to `limit` characters."""
    return _cut(_ABS_PATH.sub(lambda m: m.group(1) or "<path>", printable(str(text))), limit)


def _trim(value, limit=MAX_ECHO):
    """A JSON-able value (its text printable()), replaced by its JSON text (cut to `limit`
    characters) when that is longer than `limit` or holds NaN or an infinity, which a JSON
    answer cannot hold."""
    value = _printable_tree(str(value) if isinstance(value, Exception) else jsonable_encoder(value))
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError:  # NaN, Infinity: echoed as the text Python's json reads them from
        return _cut(json.dumps(value), limit)
    return value if len(text) <= limit else _cut(text, limit)


def trimmed_errors(errors):
    """pydantic / FastAPI validation errors with the echoed input, context and location cut."""
    out = []
    for e in errors:
        item = {
            "type": e.get("type"),
            "msg": public_message(e.get("msg", "")),
            "loc": [x if isinstance(x, int) else _trim(str(x), 40) for x in e.get("loc", ())],
        }
        if "input" in e:
            item["input"] = _trim(e["input"])
        if e.get("ctx"):
            item["ctx"] = {k: _trim(v) for k, v in e["ctx"].items()}
        out.append(item)
    return out


def validation_text(errors):
    """One line per validation error: 'loc: message'."""
    parts = []
    for e in trimmed_errors(errors):
        loc = ".".join(str(x) for x in e["loc"])
        parts.append(f"{loc}: {e['msg']}" if loc else e["msg"])
    return "; ".join(parts)


async def validation_error_handler(request, exc):
    """422 like FastAPI's own, with what the client sent trimmed (RequestValidationError) and a
    broken bound's message followed by the field's whole valid range (dashboard/ranges.py)."""

    def find(loc):
        try:
            found = request_schema(request.app, request.scope.get("route"), loc)
        except Exception:  # noqa: BLE001 - no OpenAPI document: the message without the range
            return None
        return schema_range(found[0], found[2], found[1]) if found else None

    errors = with_ranges(exc.errors(), find)
    return SafeJSONResponse(status_code=422, content={"detail": trimmed_errors(errors)})


async def http_error_handler(request, exc: HTTPException):
    """HTTPException answers like Starlette's, sent with SafeJSONResponse."""
    if exc.status_code in (204, 304):  # no body allowed
        return SafeJSONResponse(None, status_code=exc.status_code, headers=exc.headers)
    return SafeJSONResponse(
        {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
    )
