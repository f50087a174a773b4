"""The pseudonym of a Prolific ID: a keyed hash, stable within a study, different across
studies, computed alike in Python and in SQL."""

import hashlib
import hmac

import pytest

from apps.surveys import pseudonyms
from apps.surveys.models import Participant
from apps.surveys.pseudonyms import pseudonym, pseudonym_sql

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_key():
    pseudonyms._key.cache_clear()
    yield
    pseudonyms._key.cache_clear()


def test_pseudonym_is_rfc_2104_hmac_sha256_of_study_and_id(settings):
    settings.PSEUDONYM_KEY = "k" * 80  # longer than a block: hashed first, as RFC 2104 says
    expected = hmac.new(b"k" * 80, b"7:5f0c1a", hashlib.sha256).hexdigest()[:16]
    assert pseudonym(study_id=7, prolific_pid="5f0c1a") == "P-" + expected


def test_pseudonym_is_stable_within_a_study_and_differs_across_studies():
    one = pseudonym(study_id=1, prolific_pid="abc")
    assert one == pseudonym(study_id=1, prolific_pid="abc")
    assert one != pseudonym(study_id=2, prolific_pid="abc")
    assert one != pseudonym(study_id=1, prolific_pid="abd")
    assert "abc" not in one


def test_pseudonym_depends_on_the_key(settings):
    before = pseudonym(study_id=1, prolific_pid="abc")
    settings.PSEUDONYM_KEY = "another key"
    pseudonyms._key.cache_clear()
    assert pseudonym(study_id=1, prolific_pid="abc") != before


def test_an_empty_id_has_an_empty_pseudonym():
    assert pseudonym(study_id=1, prolific_pid="") == ""


def test_sql_and_python_give_the_same_pseudonym(make_study, settings):
    settings.PSEUDONYM_KEY = "a key with ünïcode"
    pseudonyms._key.cache_clear()
    study = make_study(count=5, live=False)
    other = make_study(count=5, live=False)
    pids = ["5f0c1a2b3c4d5e6f7a8b9c0d", "x'; DROP TABLE x; --", "ünï"]
    for s in (study, other):
        for pid in pids:
            Participant.objects.create(study=s, prolific_pid=pid)
    rows = Participant.objects.annotate(p=pseudonym_sql("study_id", "prolific_pid")).values_list(
        "study_id", "prolific_pid", "p"
    )
    assert len(rows) == 6
    for study_id, pid, found in rows:
        assert found == pseudonym(study_id=study_id, prolific_pid=pid)
    assert len({p for _s, _pid, p in rows}) == 6
