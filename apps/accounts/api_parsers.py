"""The API's JSON parser (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES): DRF's, with the body's
nesting bounded before it is decoded.

Python's decoder recurses once per level, so a body of a few thousand brackets raised
RecursionError (a 500) wherever it was read. No request of the API nests deeper than a few
levels, so a body deeper than MAX_DEPTH is refused as a 400 naming its top-level field.
"""

import codecs
import json as std_json
import re
from itertools import accumulate

from rest_framework import exceptions, serializers
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.settings import api_settings
from rest_framework.utils import json

MAX_DEPTH = 32

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_STRING_OR_BRACKET = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")\s*(:)?|[\[\]{}]')
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deep the text's arrays and objects nest (brackets inside strings do not count).
    In C-speed passes: the body is read whole before anything else looks at it."""
    brackets = _NOT_A_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def field_deeper_than(text: str, depth: int) -> str | None:
    """The top-level key under which the text first nests deeper than `depth`; None when the
    body itself is an array."""
    level, key = 0, None
    for token in _STRING_OR_BRACKET.finditer(text):
        string, colon = token.groups()
        if string is None:
            level += _STEP[token[0]]
            if level > depth:
                return key
        elif colon and level == 1:
            try:
                key = std_json.loads(string)
            except ValueError:
                key = string[1:-1]
    return key


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})
        try:
            text = codecs.getreader(encoding)(stream).read()
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
        if json_depth(text) > MAX_DEPTH:
            field = field_deeper_than(text, MAX_DEPTH) or api_settings.NON_FIELD_ERRORS_KEY
            message = f"Nested deeper than {MAX_DEPTH} levels: no request needs as many."
            raise serializers.ValidationError({field: [message]}, code="too_deep")
        try:
            return json.loads(text, parse_constant=json.strict_constant if self.strict else None)
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
