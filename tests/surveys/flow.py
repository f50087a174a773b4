"""Driving the participant's path with Django's test client, as a browser without JS would."""

import re

from apps.surveys import selectors
from apps.surveys.models import Participant
from tests.factories import new_pid

SESSION = "c" * 24
STUDY = "b" * 24


def link(study, pid: str, session: str = SESSION, study_id: str = STUDY) -> str:
    return f"/s/{study.slug}/?PROLIFIC_PID={pid}&STUDY_ID={study_id}&SESSION_ID={session}"


def consent(client, study, pid: str | None = None, session: str = SESSION, decision="agree"):
    pid = pid or new_pid()
    page = client.get(link(study, pid, session)).content.decode()
    shown = re.search(r'name="shown" value="([^"]+)"', page)
    data = {"PROLIFIC_PID": pid, "STUDY_ID": STUDY, "SESSION_ID": session, "decision": decision}
    if shown:
        data["shown"] = shown.group(1)
    response = client.post(f"/s/{study.slug}/consent/", data)
    return pid, response


def answers_for(items, value="4", explanation="It shares only what the task needs, nothing more."):
    """A page's answers to `items` (a page reads those of its items only): yes, "A" for a
    pair, and `value` on a scale."""
    data = {}
    for item in items:
        data[f"value_{item.code}"] = {"yes_no": "yes", "pair": "a"}.get(item.kind, value)
        data[f"explanation_{item.code}"] = explanation
    return data


def finish(client, study, pid: str | None = None, session: str = SESSION) -> Participant:
    """Consent, instructions, every scenario, demographics; the finished participant."""
    pid, _ = consent(client, study, pid, session)
    client.post(f"/s/{study.slug}/instructions/")
    participant = Participant.objects.get(study=study, prolific_pid=pid)
    items = list(study.items.filter(attention_check=False))
    for assignment in participant.assignments.order_by("position"):
        client.post(f"/s/{study.slug}/scenario/{assignment.pk}/", answers_for(items))
    response = client.post(
        f"/s/{study.slug}/about-you/",
        {"age": "25-34", "gender": "no_say", "education": "bachelor", "income": "no_say"},
    )
    assert response["Location"] == f"/s/{study.slug}/done/"
    participant.refresh_from_db()
    return participant


def completed_per_scenario(study) -> dict[str, int]:
    """Unit name (a scenario's, or an answer unit's label) -> completed ratings (what analysis
    will use), as the study page counts them."""
    return {
        unit.name: unit.completed for unit in selectors.study_scenarios_with_counts(study=study)
    }
