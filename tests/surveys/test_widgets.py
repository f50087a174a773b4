"""The participant pages' fast widget tags write exactly what Django's widgets render."""

import pytest
from django.template import Context, Template

from apps.surveys.forms import DemographicsForm, ScenarioAnswersForm
from apps.surveys.models import SurveyItem
from apps.surveys.templatetags.surveys import radio_choices, textarea

DJANGO_RADIOS = Template(
    '{% for radio in field %}<label class="choice" for="{{ radio.id_for_label }}">'
    "{{ radio.tag }}<span>{{ radio.choice_label }}</span></label>{% endfor %}"
)
ITEMS = [
    SurveyItem(code="H1", kind="yes_no", wording="Done?", explanation_required=False),
    SurveyItem(
        code="H2",
        kind="scale",
        wording="<b>Helpful</b>?",
        scale_labels=["Not <i>at</i> all", "A & B", "3", '"4"', "'5'"],
    ),
]


def forms():
    yield ScenarioAnswersForm(items=ITEMS)
    yield ScenarioAnswersForm(
        initial={"value_H2": "3", "explanation_H2": 'Mine <script>alert("x")</script> & yours'},
        items=ITEMS,
    )
    missing = ScenarioAnswersForm({"value_H1": "yes", "explanation_H2": ""}, items=ITEMS)
    assert not missing.is_valid()
    yield missing
    valid = ScenarioAnswersForm(
        {"value_H1": "no", "value_H2": "5", "explanation_H2": "  two\nlines  "}, items=ITEMS
    )
    assert valid.is_valid()
    yield valid


@pytest.mark.parametrize("form", list(forms()))
def test_radio_and_textarea_tags_match_djangos_widgets(form):
    for item in ITEMS:
        radios = form[f"value_{item.code}"]
        assert radio_choices(radios) == DJANGO_RADIOS.render(Context({"field": radios}))
        box = form[f"explanation_{item.code}"]
        assert textarea(box) == str(box)


@pytest.mark.parametrize("data", [None, {"age": "18-24", "gender": "nonsense"}])
def test_demographics_radios_match_djangos(data):
    form = DemographicsForm(data)
    form.is_valid()
    for name in DemographicsForm.LEGENDS:
        assert radio_choices(form[name]) == DJANGO_RADIOS.render(Context({"field": form[name]}))
