"""The reader every importer shares: what UTF-8 cannot hold and what JSON would settle
silently are refused by place, and what is fine is read as it is."""

import pytest

from apps.console.uploads import UploadRefused, csv_rows, json_parse, text_decode


def test_text_given_as_a_string_with_a_lone_surrogate_is_refused_by_line_and_column():
    with pytest.raises(UploadRefused, match=r"line 2, column 4: a lone surrogate \(\\ud800\)"):
        text_decode('{"a":\n"b \ud800"}', max_bytes=1000)


def test_every_repeated_key_is_named_by_the_path_of_its_object():
    text = '{"items": [{"id": 1}, {"id": 2, "n": 1, "id": 3, "n": 2}], "format": 1, "format": 2}'
    with pytest.raises(UploadRefused) as refused:
        json_parse(text)
    message = str(refused.value)
    assert 'items[1]: the key "id" appears twice' in message
    assert 'items[1]: the key "n" appears twice' in message
    assert 'the top level: the key "format" appears twice' in message


def test_a_surrogate_pair_and_a_key_repeated_in_different_objects_are_read():
    value = json_parse('[{"id": "\\ud83d\\ude00"}, {"id": "x"}]')
    assert value == [{"id": "\U0001f600"}, {"id": "x"}]


def test_a_csv_header_naming_a_column_twice_is_refused():
    with pytest.raises(UploadRefused, match='the column "b" appears twice'):
        csv_rows("a,b,b\n1,2,3\n")
