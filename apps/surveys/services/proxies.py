"""Proxy participants: models answering a study's survey as people do.

A proxy run is made whole at creation, as a sampling run is: one proxy `Participant` per
(model, run index) and one `ProxyCall` per (participant, scenario), each with the seed its
call carries, so that what the run will do is in the database before it does any of it and
progress is counted from those rows. The bulk engine (apps/llm/engine.py, `ProxyWork`
below) takes the calls while the run is running: one call per scenario with every item in
it, the answer validated against each item's scale (a malformed answer is asked again a
bounded number of times by the gateway, then the call fails with its reason), and recorded
as an `Assignment` (status proxy, never counted among people's ratings) with an `Answer` per
item, so every analysis reads people and proxies from the same rows.

A proxy sees what a participant sees: the task and the trajectory, the response shown in the
study, and each item's wording and answers, with the request for an explanation where the
item asks for one (attention checks are for people, and are left out); the default prompt
(survey_proxy v2) adds only the reply's format. In an answer study a unit is a question and
an answer, or a question and Answers A and B, asked with the items asked of that kind of unit
(`SurveyItem.unit_kind`), in survey_proxy v3, which says "question" and "answer" where v2
says "scenario" and "response". Temperature is the provider's default unless the run sets
one, as in the published study; a run that departs from this says so
(selectors.proxy_run_fidelity_notes).

A sweep (`proxy_sweep_create`) is one run of one model's variants, each proxy labelled by its
variant: temperatures (each proxy's `temperature` overrides the run's), and personas, each
made from one person who finished the study. A persona proxy holds that person's age, gender,
education and income in its own fields; its calls say them in one sentence, as a system
message before the unchanged survey (`persona_text`, `persona_messages`), built from the
proxy's own row alone, so that nothing the person rated or wrote can reach the prompt.
"""

import json
import secrets
from decimal import Decimal

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from apps.llm import costs, engine, runs
from apps.llm.batches import batch_mode_refusal
from apps.llm.errors import PromptError
from apps.llm.models import BatchRetry, ModelConfig, PromptTemplate, Purpose
from apps.llm.selectors import prompt_render

from ..errors import SurveyError
from ..models import (
    PROXY_CALL_STATES,
    AgeBand,
    Answer,
    Assignment,
    AssignmentStatus,
    Education,
    Gender,
    Income,
    ItemKind,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ProxyCall,
    ProxyCallStatus,
    ProxyRun,
    Study,
    StudyKind,
    StudyScenario,
    SurveyItem,
    UnitKind,
)
from ..selectors import (
    PERSONA_VARIANT,
    proxy_prompt_default,
    proxy_prompt_fits,
    sweep_temperature_label,
)

# What the participant's page asks under an item that wants an explanation.
EXPLANATION_ASKED = "Why did you answer this way?"
MAX_RUNS_PER_MODEL = 20
CREATE_BATCH = 5000
STATES = PROXY_CALL_STATES

ANSWERS_SCHEMA = {
    "type": "object",
    "required": ["answers"],
    "properties": {
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["code", "value", "explanation"],
                "properties": {
                    "code": {"type": "string"},
                    "value": {"type": ["string", "integer"]},
                    "explanation": {"type": "string"},
                },
            },
        }
    },
}


def proxy_items(*, study: Study, unit_kind: str | None = None) -> list[SurveyItem]:
    """The items a proxy answers: the study's, without its attention checks; with
    `unit_kind`, those asked of units of that kind (as their page asks them)."""
    items = SurveyItem.objects.filter(study=study, attention_check=False)
    if unit_kind is not None:
        items = items.filter(unit_kind=unit_kind)
    return list(items)


def questions_text(items: list[SurveyItem]) -> str:
    """The items as the participant's page shows them (surveys/participant/scenario.html):
    each item's wording, its answers in order, and the request for an explanation where the
    item asks for one. Each item is headed by its code and each answer carries its key, in
    brackets: what the reply names them by."""
    blocks = []
    for item in items:
        lines = [f"{item.code}. {item.wording}"]
        lines += [f"({key}) {label}" for key, label in item.choices]
        if item.explanation_required:
            lines.append(EXPLANATION_ASKED)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def items_json(items: list[SurveyItem]) -> str:
    listed = [
        {"code": i.code, "wording": i.wording, "kind": i.kind, "scale_labels": i.scale_labels}
        for i in items
    ]
    return json.dumps(listed, ensure_ascii=False)


def scenario_as_read(study_scenario: StudyScenario) -> str:
    """The scenario as a participant reads it: the task, then what the agent did."""
    scenario = study_scenario.scenario
    return (
        f"The task the user gave the assistant:\n{scenario.task}\n\n"
        f"What the assistant did with the user's tools:\n{scenario.trajectory}"
    )


def answers_as_read(study_scenario: StudyScenario) -> str:
    """An answer unit's answer, or a pair's Answers A and B, as their page shows them, each
    headed and in a tag of its own."""
    if study_scenario.kind == UnitKind.PAIR:
        return (
            f"Answer A:\n<answer_a>\n{study_scenario.answer_text}\n</answer_a>\n\n"
            f"Answer B:\n<answer_b>\n{study_scenario.answer_b_text}\n</answer_b>"
        )
    return f"The answer:\n<answer>\n{study_scenario.answer_text}\n</answer>"


def proxy_prompt_variables(*, study_scenario: StudyScenario, items: list[SurveyItem]) -> dict:
    """Everything a survey_proxy prompt may use about this unit (llm.models.PROMPT_VARIABLES):
    a scenario unit fills scenario and response, an answer or pair unit question and answers
    (a prompt that needs the others is refused for it: selectors.proxy_prompt_fits)."""
    if study_scenario.kind == UnitKind.SCENARIO:
        shown = {
            "scenario": scenario_as_read(study_scenario),
            "response": study_scenario.response.text,
        }
    else:
        shown = {
            "question": study_scenario.question_text,
            "answers": answers_as_read(study_scenario),
        }
    return shown | {"questions": questions_text(items), "items": items_json(items)}


def unit_chars(study_scenario: StudyScenario) -> int:
    """The length of what a proxy reads of one unit, for estimates."""
    ss = study_scenario
    if ss.kind == UnitKind.SCENARIO:
        return len(scenario_as_read(ss)) + (len(ss.response.text) if ss.response else 0)
    return len(answers_as_read(ss)) + len(ss.question_text)


# A persona proxy's description, from its own demographic fields; "prefer not to say" and
# "another way" describe nobody, and are left out.
PERSONA_GENDER = {
    Gender.WOMAN: "a woman",
    Gender.MAN: "a man",
    Gender.NON_BINARY: "a non-binary person",
}
PERSONA_EDUCATION = {
    Education.BELOW_HS: "less than a high school education",
    Education.HS: "a high school education or equivalent",
    Education.SOME_COLLEGE: "some college but no degree",
    Education.ASSOCIATE: "an associate degree",
    Education.BACHELOR: "a bachelor's degree",
    Education.MASTER: "a master's degree",
    Education.DOCTORATE: "a doctorate or professional degree",
}


def persona_text(proxy: Participant) -> str:
    """What a persona proxy is told of itself, built from the proxy's own age, gender,
    education and income (copied from a person when the sweep was made) and from nothing
    else: never the person's row, assignments or answers. "" when none of them says anything.
    E.g. "You are taking part in this survey as a woman aged 25-34, with a bachelor's degree
    and a household income of $50,000-$74,999." """
    who = PERSONA_GENDER.get(proxy.gender, "a person")
    if proxy.age and proxy.age != AgeBand.NO_SAY:
        who += f" aged {AgeBand(proxy.age).label}"
    more = []
    if proxy.education in PERSONA_EDUCATION:
        more.append(PERSONA_EDUCATION[proxy.education])
    if proxy.income and proxy.income != Income.NO_SAY:
        label = Income(proxy.income).label
        more.append(f"a household income of {label[0].lower()}{label[1:]}")
    if who == "a person" and not more:
        return ""
    return f"You are taking part in this survey as {who}" + (
        f", with {' and '.join(more)}." if more else "."
    )


def persona_messages(messages: list[dict], persona: str) -> list[dict]:
    """The prompt's messages with the persona said first, as the system message (before the
    prompt's own system text, if it has one)."""
    if not persona:
        return messages
    if messages and messages[0]["role"] == "system":
        first = {"role": "system", "content": f"{persona}\n\n{messages[0]['content']}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": persona}, *messages]


def answer_value(item: SurveyItem, value) -> str | None:
    """The stored form of a proxy's answer to `item` (as a person's answer is stored), or
    None when it is not one of the item's choices."""
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    if isinstance(value, bool) or text is None:
        return None
    choices = {key for key, _label in item.choices}
    return text if text in choices else None


def answers_check(items: list[SurveyItem]):
    """The check that an answer has one valid value (and, where the item asks for one, an
    explanation) for each item; the problem is told to the model when it is asked again."""
    by_code = {item.code: item for item in items}

    def check(data: dict) -> str | None:
        codes = [a["code"] for a in data["answers"]]
        problems = []
        missing = [code for code in by_code if code not in codes]
        if missing:
            problems.append(f"no answer for {', '.join(missing)}")
        unknown = sorted({c for c in codes if c not in by_code})
        if unknown:
            problems.append(f"answers for questions that do not exist ({', '.join(unknown)})")
        repeated = sorted({c for c in codes if codes.count(c) > 1 and c in by_code})
        if repeated:
            problems.append(f"more than one answer for {', '.join(repeated)}")
        for answer in data["answers"]:
            item = by_code.get(answer["code"])
            if item is None:
                continue
            if answer_value(item, answer["value"]) is None:
                if item.kind == ItemKind.YES_NO:
                    problems.append(f'{item.code} must be "yes" or "no"')
                elif item.kind == ItemKind.PAIR:
                    problems.append(f'{item.code} must be "a", "b" or "equal"')
                else:
                    problems.append(
                        f"{item.code} must be a whole number from 1 to {len(item.scale_labels)}"
                    )
            if item.explanation_required and not answer["explanation"].strip():
                problems.append(f"{item.code} needs an explanation")
        return "; ".join(problems) or None

    return check


def proxy_units(*, study: Study, prompt: PromptTemplate | None) -> tuple[list, PromptTemplate]:
    """The units a proxy of `study` is asked about, in order, and the prompt it is asked
    with (the default for the study's kind unless given), or the reason it can't be."""
    if study.kind == StudyKind.ANSWERS:
        units = list(study.study_scenarios.order_by("label", "pk"))
        if not units:
            raise SurveyError("The study has no answers or pairs to rate: draw them first.")
    else:
        units = list(study.study_scenarios.order_by("scenario__name"))
        if not units:
            raise SurveyError("The study has no scenarios.")
        missing = sum(1 for ss in units if ss.response_id is None)
        if missing:
            raise SurveyError(
                f"{missing} of the study's scenarios have no response to rate yet: generate "
                "or import them first."
            )
    if not proxy_items(study=study):
        raise SurveyError("The study has no items to answer.")
    for kind in sorted({ss.kind for ss in units}):
        if not proxy_items(study=study, unit_kind=kind):
            raise SurveyError(
                f'The study asks nothing of its units of kind "{UnitKind(kind).label}": '
                "add items asked of them first."
            )
    if prompt is not None and prompt.purpose != Purpose.SURVEY_PROXY:
        raise SurveyError(f"{prompt} is not a prompt for proxies.")
    try:
        prompt = prompt or proxy_prompt_default(kind=study.kind)
    except PromptError as exc:
        raise SurveyError(str(exc)) from exc
    if not proxy_prompt_fits(prompt=prompt, kind=study.kind):
        raise SurveyError(
            f"{prompt} asks about another kind of unit than this study's "
            f"({StudyKind(study.kind).label}): choose a version made for them."
        )
    return units, prompt


def _proxies_create(*, run: ProxyRun, proxies: list[Participant], units: list) -> None:
    """`proxies` numbered on from the study's earlier proxies of each model, saved with a
    pending call per unit each. The caller holds the study's row lock."""
    taken = dict(
        Participant.objects.filter(study=run.study, kind=ParticipantKind.PROXY)
        .values_list("model_id")
        .annotate(top=Max("run_index"))
    )
    for proxy in proxies:
        taken[proxy.model_id] = (taken.get(proxy.model_id) or 0) + 1
        proxy.run_index = taken[proxy.model_id]
    participants = Participant.objects.bulk_create(proxies)
    ProxyCall.objects.bulk_create(
        (
            ProxyCall(
                run=run,
                participant=participant,
                study_scenario=ss,
                position=position,
                seed=engine.call_seed(run.seed, participant.model_id, participant.run_index, ss.pk),
            )
            # Unit by unit, every proxy within: the engine claims rows in id order, and a
            # batch of one model's rows would wait on that model's limit alone
            # (benchmarks/survey_report.py).
            for position, ss in enumerate(units, start=1)
            for participant in participants
        ),
        batch_size=CREATE_BATCH,
    )


def _settings_check(*, models, runs: int, runs_noun: str, budget_usd) -> None:
    if not models:
        raise SurveyError("Choose at least one model.")
    inactive = [m.display_name for m in models if not m.active]
    if inactive:
        raise SurveyError(f"These models are switched off: {', '.join(inactive)}.")
    if not 1 <= runs <= MAX_RUNS_PER_MODEL:
        raise SurveyError(f"{runs_noun} must be between 1 and {MAX_RUNS_PER_MODEL}.")
    if budget_usd is not None and budget_usd <= 0:
        raise SurveyError("A budget must be more than $0, or left empty for none.")


def proxy_run_create(
    *,
    study: Study,
    models,
    runs_per_model: int = 5,
    temperature: Decimal | None = None,
    budget_usd: Decimal | None = None,
    seed: int | None = None,
    user=None,
    prompt: PromptTemplate | None = None,
    batch_mode: bool = False,
    batch_retry: str = BatchRetry.BATCH,
) -> ProxyRun:
    """A draft run with its proxy participants and every call, pending; `proxy_run_launch`
    starts it. Run indexes go on from the study's earlier proxy runs of the same model.
    `prompt`: a survey_proxy version; unless given, the newest for the study's kind of units
    that is the survey alone. In `batch_mode` the calls go through the providers' batch APIs
    (apps/llm/batches.py), which every proxy model must have."""
    models = list(models)
    _settings_check(
        models=models, runs=runs_per_model, runs_noun="Runs per model", budget_usd=budget_usd
    )
    if temperature is not None and not 0 <= temperature <= 2:
        raise SurveyError("A temperature must be between 0 and 2, or left empty.")
    refusal = batch_mode_refusal(batch_mode=batch_mode, batch_retry=batch_retry, models=models)
    if refusal:
        raise SurveyError(refusal)
    units, prompt = proxy_units(study=study, prompt=prompt)
    seed = secrets.randbelow(2**31) if seed is None else seed
    with transaction.atomic():
        Study.objects.select_for_update().get(pk=study.pk)  # one run numbering at a time
        run = ProxyRun.objects.create(
            study=study,
            runs_per_model=runs_per_model,
            prompt=prompt,
            temperature=temperature,
            budget_usd=budget_usd,
            created_by=user,
            seed=seed,
            batch_mode=batch_mode,
            batch_retry=batch_retry,
        )
        run.model_configs.set(models)
        proxies = [
            Participant(study=study, kind=ParticipantKind.PROXY, model=model, proxy_run=run)
            for model in models
            for _index in range(runs_per_model)
        ]
        _proxies_create(run=run, proxies=proxies, units=units)
    return run


def sweep_temperatures_check(temperatures) -> list[Decimal]:
    """A sweep's temperatures as given, each checked (0-2, at most two decimals, once)."""
    checked = []
    for temperature in temperatures:
        if not 0 <= temperature <= 2:
            raise SurveyError(f"A temperature must be between 0 and 2: {temperature} is not.")
        if temperature != temperature.quantize(Decimal("0.01")):
            raise SurveyError(f"A temperature takes at most two decimals: {temperature} has more.")
        if temperature in checked:
            raise SurveyError(f"The temperature {temperature} is listed twice.")
        checked.append(temperature)
    return checked


def proxy_sweep_create(
    *,
    study: Study,
    model: ModelConfig,
    temperatures: list[Decimal],
    personas: bool,
    runs_per_variant: int,
    persona_temperature: Decimal | None = None,
    user=None,
    seed: int | None = None,
    budget_usd: Decimal | None = None,
) -> ProxyRun:
    """A draft run of one model's variants, each a proxy of its own (its `variant` names it):
    for each of `temperatures`, `runs_per_variant` proxies whose calls send that temperature
    ("temperature 0.7"); with `personas`, one proxy ("persona") for each person who finished
    the study, simulated or not, given that person's age, gender, education and income in its
    own fields (`persona_of` says whose) and told them in a system message (`persona_text`),
    at `persona_temperature` (empty: the provider's default). The prompt is the study's
    default, the survey alone; the run's lifecycle is a proxy run's."""
    _settings_check(
        models=[model], runs=runs_per_variant, runs_noun="Runs per variant", budget_usd=budget_usd
    )
    temperatures = sweep_temperatures_check(temperatures)
    if persona_temperature is not None and not 0 <= persona_temperature <= 2:
        raise SurveyError("A temperature must be between 0 and 2, or left empty.")
    if not temperatures and not personas:
        raise SurveyError("A sweep needs at least one variant: a temperature, or personas.")
    people = []
    if personas:
        people = list(
            Participant.objects.filter(
                study=study, kind=ParticipantKind.HUMAN, status=ParticipantStatus.FINISHED
            )
            .order_by("pk")
            .only("pk", "age", "gender", "education", "income")
        )
        if not people:
            raise SurveyError(
                "No one has finished the study yet: personas are made from the people who "
                "finished it."
            )
    units, prompt = proxy_units(study=study, prompt=None)
    seed = secrets.randbelow(2**31) if seed is None else seed
    with transaction.atomic():
        Study.objects.select_for_update().get(pk=study.pk)  # one run numbering at a time
        run = ProxyRun.objects.create(
            study=study,
            runs_per_model=runs_per_variant,
            prompt=prompt,
            budget_usd=budget_usd,
            created_by=user,
            seed=seed,
            sweep_temperatures=[f"{t.normalize():f}" for t in temperatures],
            sweep_personas=personas,
        )
        run.model_configs.set([model])
        proxy = {"study": study, "kind": ParticipantKind.PROXY, "model": model, "proxy_run": run}
        proxies = [
            Participant(**proxy, variant=sweep_temperature_label(t), temperature=t)
            for t in temperatures
            for _index in range(runs_per_variant)
        ]
        proxies += [
            Participant(
                **proxy,
                variant=PERSONA_VARIANT,
                temperature=persona_temperature,
                persona_of=person,
                age=person.age,
                gender=person.gender,
                education=person.education,
                income=person.income,
            )
            for person in people
        ]
        _proxies_create(run=run, proxies=proxies, units=units)
    return run


def proxy_run_launch(*, run: ProxyRun) -> ProxyRun:
    """Draft -> running; the engine starts on it when the caller's transaction commits."""
    return runs.run_launch(PROXY_WORK, run=run)


def proxy_run_pause(*, run: ProxyRun) -> ProxyRun:
    return runs.run_pause(PROXY_WORK, run=run)


def proxy_run_resume(*, run: ProxyRun) -> ProxyRun:
    return runs.run_resume(PROXY_WORK, run=run)


def proxy_run_cancel(*, run: ProxyRun) -> ProxyRun:
    return runs.run_cancel(PROXY_WORK, run=run)


def proxy_run_budget_set(*, run: ProxyRun, budget_usd: Decimal | None) -> ProxyRun:
    return runs.run_budget_set(PROXY_WORK, run=run, budget_usd=budget_usd)


def proxy_calls_retry(*, run: ProxyRun, error_kind: str = "") -> int:
    """Failed calls (all, or those that failed with `error_kind`) made again."""
    return runs.run_failed_retry(PROXY_WORK, run=run, error_kind=error_kind)


def proxy_estimate(
    *, study: Study, models, runs_per_model: int, prompt: PromptTemplate | None = None
) -> dict:
    """Calls and their estimated cost, live and in batch mode, per model: tokens in from the
    prompt (the default unless given), the items and the units' texts' length (a scenario and
    its response, a question and its answer or answers); tokens out from each
    model's recent answers (apps/llm/costs.py). The batch total is None when a model has no
    batch API."""
    prompt = prompt or proxy_prompt_default(kind=study.kind)
    fixed = len(prompt.system_text) + len(prompt.user_text)
    items = {}
    for kind in UnitKind.values:
        listed = proxy_items(study=study, unit_kind=kind)
        as_asked = questions_text(listed) if "questions" in prompt.variables else items_json(listed)
        items[kind] = len(as_asked)
    rows = study.study_scenarios.select_related("scenario", "response")
    chars = [fixed + items[ss.kind] + unit_chars(ss) for ss in rows]
    tokens_in = sum(costs.tokens_in(n) for n in chars) * runs_per_model
    per_model, total, batch_total = [], Decimal(0), Decimal(0)
    for model in models:
        tokens_out = costs.typical_output_tokens(model, Purpose.SURVEY_PROXY) * len(chars)
        tokens_out *= runs_per_model
        cost = costs.call_cost(
            costs.price_per_mtok(model), tokens_in=tokens_in, tokens_out=tokens_out
        )
        batch = costs.batch_cost(model, cost)
        per_model.append(
            {
                "model": model,
                "calls": len(chars) * runs_per_model,
                "cost_usd": cost,
                "batch_cost_usd": batch,
            }
        )
        total += cost or 0
        batch_total += batch or 0
    calls = sum(m["calls"] for m in per_model)
    no_batch_api = [m["model"] for m in per_model if not m["model"].batch_api]
    return {
        "calls": calls,
        "cost_usd": total,
        "batch_cost_usd": None if no_batch_api else batch_total,
        "no_batch_api": no_batch_api,
        "models": per_model,
    }


class ProxyWork(runs.RunWork):
    """The engine's view of a proxy run's calls (scope: the run)."""

    name = "surveys.proxy"
    noun = "proxy run"
    error = SurveyError
    caller = "proxy_call"
    model = ProxyCall
    states = STATES
    estimate_fields = ("pk", "participant__model_id", "study_scenario_id")

    def rows(self, scope):
        return ProxyCall.objects.filter(run_id=scope)

    def runs(self):
        return ProxyRun.objects.all()

    def estimate(self, rows):
        models = ModelConfig.objects.in_bulk({r["participant__model_id"] for r in rows})
        prices = {pk: costs.price_per_mtok(m) for pk, m in models.items()}
        out = {
            pk: costs.typical_output_tokens(m, Purpose.SURVEY_PROXY, ceiling=True)
            for pk, m in models.items()
        }
        scenarios = {
            ss.pk: ss
            for ss in StudyScenario.objects.filter(
                pk__in={r["study_scenario_id"] for r in rows}
            ).select_related("scenario", "response")
        }
        estimates = []
        for row in rows:
            chars = unit_chars(scenarios[row["study_scenario_id"]])
            model_id = row["participant__model_id"]
            cost = costs.call_cost(
                prices[model_id], tokens_in=costs.tokens_in(chars + 2000), tokens_out=out[model_id]
            )
            estimates.append(cost or Decimal(0))
        return estimates

    def calls(self, ids):
        rows = list(
            ProxyCall.objects.filter(pk__in=ids).select_related(
                "run__prompt",
                "participant__model",
                "study_scenario__scenario",
                "study_scenario__response",
            )
        )
        items: dict[tuple[int, str], list[SurveyItem]] = {}
        calls, refused = [], []
        for row in rows:
            run, ss, proxy = row.run, row.study_scenario, row.participant
            if (run.study_id, ss.kind) not in items:
                study = Study(pk=run.study_id)
                items[run.study_id, ss.kind] = proxy_items(study=study, unit_kind=ss.kind)
            listed = items[run.study_id, ss.kind]
            if ss.kind == UnitKind.SCENARIO and ss.response is None:
                refused.append((row.pk, "The scenario has no response to rate."))
                continue
            try:
                messages = prompt_render(
                    template=run.prompt,
                    variables=proxy_prompt_variables(study_scenario=ss, items=listed),
                )
            except PromptError as exc:
                refused.append((row.pk, str(exc)))
                continue
            # A persona proxy reads its own demographic fields, said before the survey; the
            # person it was made from is never loaded here (persona_text).
            if proxy.variant == PERSONA_VARIANT:
                messages = persona_messages(messages, persona_text(proxy))
            params = {"seed": row.seed}
            temperature = run.temperature if proxy.temperature is None else proxy.temperature
            if temperature is not None:
                params["temperature"] = float(temperature)
            calls.append(
                engine.Call(
                    row_id=row.pk,
                    model=row.participant.model,
                    messages=messages,
                    purpose=Purpose.SURVEY_PROXY,
                    params=params,
                    schema=ANSWERS_SCHEMA,
                    check=answers_check(listed),
                    prompt=run.prompt,
                )
            )
        return calls, refused

    def record(self, results, *, owner):
        now = timezone.now()
        with transaction.atomic():
            mine = self.held_ids(results, owner=owner)
            held = {
                c.pk: c
                for c in ProxyCall.objects.filter(pk__in=mine)
                .select_related("run")
                .only("pk", "participant_id", "study_scenario_id", "position", "run__study_id")
            }
            items: dict[int, dict[str, SurveyItem]] = {}
            rows, answered = [], []
            for result, row in self.recorded(results, mine=held):
                if (c := result.completion) is not None:
                    row.status = ProxyCallStatus.DONE
                    row.input_tokens, row.output_tokens = c.input_tokens, c.output_tokens
                    row.cost_usd, row.latency_ms = c.cost_usd, c.latency_ms
                    answered.append((held[row.pk], c.data["answers"]))
                rows.append(row)
            for call, _answers in answered:
                if call.run.study_id not in items:
                    listed = proxy_items(study=Study(pk=call.run.study_id))
                    items[call.run.study_id] = {i.code: i for i in listed}
            assignments = Assignment.objects.bulk_create(
                Assignment(
                    participant_id=call.participant_id,
                    study_scenario_id=call.study_scenario_id,
                    position=call.position,
                    status=AssignmentStatus.PROXY,
                    reserved_at=now,
                    reserved_until=now,
                    answered_at=now,
                    completed_at=now,
                )
                for call, _answers in answered
            )
            Answer.objects.bulk_create(
                Answer(
                    assignment=assignment,
                    item=item,
                    first_saved_at=now,
                    saved_at=now,
                    value=value,
                    explanation=answer["explanation"].strip(),
                )
                for assignment, (call, answers) in zip(assignments, answered, strict=True)
                for answer in answers
                # Checked when it arrived (answers_check); an item edited since, before any
                # answer froze the items, may no longer take it: that answer is not kept.
                if (item := items[call.run.study_id].get(answer["code"])) is not None
                and (value := answer_value(item, answer["value"])) is not None
            )
            engine.rows_write(rows, RECORDED_FIELDS)

    def finished(self, scope):
        """Each proxy whose every call is done has finished too."""
        unfinished = self.rows(scope).exclude(status=ProxyCallStatus.DONE).values("participant_id")
        Participant.objects.filter(proxy_run_id=scope, status=ParticipantStatus.ACTIVE).exclude(
            pk__in=unfinished
        ).update(status=ParticipantStatus.FINISHED, finished_at=timezone.now())


RECORDED_FIELDS = [
    "status",
    "error",
    "error_kind",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_ms",
    "lease_owner",
    "lease_expires_at",
    "reserved_usd",
    "completed_at",
]

PROXY_WORK = engine.register(ProxyWork())


# Every move a proxy run's page and the API make, by name (apps/llm/views.py run_control).
PROXY_RUN_CONTROLS = {
    "launch": proxy_run_launch,
    "pause": proxy_run_pause,
    "resume": proxy_run_resume,
    "cancel": proxy_run_cancel,
    "budget": proxy_run_budget_set,
    "retry": proxy_calls_retry,
}
