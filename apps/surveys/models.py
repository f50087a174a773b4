"""User-perception studies: scenarios, the responses people rate, and who rated what.

The invariant the whole app serves: every scenario of a study receives exactly
`ratings_per_scenario` completed ratings. Assignments are handed out and completed only
while holding the row lock of their `StudyScenario` (see services/reservation.py),
and the constraints below make a repeated request harmless.
"""

import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from apps.llm.leases import LeaseStates
from apps.llm.models import Batched, Leased, ModelConfig, PromptTemplate, Run

PROLIFIC_ID = RegexValidator(r"^[0-9a-f]{24}$", "A Prolific id: 24 hexadecimal characters.")
COMPLETION_CODE = RegexValidator(
    r"^[A-Za-z0-9_-]{4,32}$", "4 to 32 letters, digits, '-' or '_', as Prolific shows it."
)


# The longest text people write here (the forms, the services and the columns say so): a
# participant's explanation of an answer, a researcher's message to a rejected participant
# (which Prolific passes on), and a study's texts shown to participants.
MAX_EXPLANATION = 2000
REJECTION_MESSAGE_MAX_CHARS = 5_000
STUDY_TEXT_MAX_CHARS = 20_000


def new_key() -> str:
    return secrets.token_urlsafe(18)


def new_slug() -> str:
    return secrets.token_hex(5)


class Scenario(models.Model):
    """A PrivacyLens record, kept verbatim, plus the fields a participant is shown."""

    name = models.CharField(max_length=100, unique=True)
    record_json = models.TextField(help_text="The imported record, exactly as it was read.")
    sha256 = models.CharField(max_length=64)
    task = models.TextField(help_text="trajectory.user_instruction")
    trajectory = models.TextField(help_text="trajectory.executable_trajectory")
    user_name = models.CharField(max_length=200, blank=True)
    toolkits = models.JSONField(default=list, blank=True)
    final_action = models.CharField(max_length=200, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ResponseSource(models.TextChoices):
    GENERATED = "generated", "Generated through the gateway"
    IMPORTED = "imported", "Imported from CSV"


class ScenarioResponse(models.Model):
    """An assistant's response to a scenario's task, with where it came from."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="responses")
    text = models.TextField()
    source = models.CharField(max_length=10, choices=ResponseSource.choices)
    model = models.ForeignKey(
        ModelConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    model_name = models.CharField(max_length=200, help_text="As shown to researchers.")
    prompt = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    prompt_version = models.CharField(max_length=50, blank=True)
    offline = models.BooleanField(default=False, help_text="Made by an offline demo model.")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["scenario__name", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["scenario", "model", "prompt"],
                condition=Q(source=ResponseSource.GENERATED),
                name="response_generated_once",
            ),
            models.UniqueConstraint(
                fields=["scenario", "model_name", "prompt_version"],
                condition=Q(source=ResponseSource.IMPORTED),
                name="response_imported_once",
            ),
        ]

    def __str__(self):
        return f"{self.scenario.name}: {self.model_name} {self.prompt_version}".strip()

    @property
    def provenance(self) -> str:
        prompt = f", prompt {self.prompt_version}" if self.prompt_version else ""
        return f"{self.model_name}{prompt} ({self.get_source_display().lower()})"


class StudyStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    LIVE = "live", "Live"
    PAUSED = "paused", "Paused"
    CLOSED = "closed", "Closed"


class StudyKind(models.TextChoices):
    SCENARIOS = "scenarios", "PrivacyLens scenarios"
    ANSWERS = "answers", "Answers from a benchmark run"


class Study(models.Model):
    name = models.CharField(max_length=200)
    kind = models.CharField(
        max_length=10,
        choices=StudyKind.choices,
        default=StudyKind.SCENARIOS,
        help_text="What participants rate: scenarios with a response, or a benchmark's answers "
        "(apps/answer_studies made them).",
    )
    slug = models.SlugField(
        max_length=40,
        unique=True,
        default=new_slug,
        help_text="The study's address for participants: /s/<slug>/.",
    )
    status = models.CharField(max_length=10, choices=StudyStatus.choices, default=StudyStatus.DRAFT)
    prolific_study_id = models.CharField(
        "Prolific study id",
        max_length=24,
        blank=True,
        validators=[PROLIFIC_ID],
        help_text="When set, participants must arrive with this STUDY_ID.",
    )
    scenarios_per_participant = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(50)]
    )
    ratings_per_scenario = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(1000)]
    )
    reservation_minutes = models.PositiveIntegerField(
        "reservation timeout (minutes)",
        default=60,
        validators=[MinValueValidator(5), MaxValueValidator(24 * 60)],
    )
    consent_text = models.TextField(max_length=STUDY_TEXT_MAX_CHARS)
    instructions_text = models.TextField(max_length=STUDY_TEXT_MAX_CHARS)
    example_text = models.TextField("worked example", max_length=STUDY_TEXT_MAX_CHARS)
    code_completed = models.CharField(max_length=32, validators=[COMPLETION_CODE])
    code_no_consent = models.CharField(max_length=32, validators=[COMPLETION_CODE])
    code_failed_attention = models.CharField(max_length=32, validators=[COMPLETION_CODE])
    code_full = models.CharField(
        "code for 'study full'", max_length=32, validators=[COMPLETION_CODE]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Bumped by a database trigger (migration 0003) on any change to the study's items; never
    # goes back. Web processes cache the items under it (selectors.study_items).
    items_version = models.PositiveIntegerField(
        default=1,
        editable=False,
        help_text="Kept by a database trigger: changes whenever the study's items do.",
    )

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]

    def __str__(self):
        return self.name


class StudySimulation(models.Model):
    """What generated a study's made-up data, as the demo recorded it beside the data: who made
    it, and its parts (people, proxies, responses), each saying how it was made and listing the
    parameters of what generated it. A real study has none; the study's report shows it.

    A row of its own rather than a column of Study: every participant request reads Study's
    columns in one raw statement (selectors.participants_with_study), which takes no JSON."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="simulation")
    record = models.JSONField(
        help_text="made_by, and parts: each with what, how and parameters (name, value, about)."
    )
    recorded_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"What made the data of {self.study}"


class UnitKind(models.TextChoices):
    SCENARIO = "scenario", "Scenario and response"
    ANSWER = "answer", "Question and answer"
    PAIR = "pair", "Question and two answers"


class StudyScenario(models.Model):
    """A unit of a study, which every participant who gets it rates: a scenario and the
    response shown with it, or (answer studies) a question and one answer, or a question and
    two answers to compare. Its row lock guards the count of ratings.

    An answer unit holds the text participants see, copied when the study was drawn: what
    people rated never changes under them, and this app needs nothing of the benchmark's
    (apps/answer_studies links each unit to the answers it shows)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_scenarios")
    kind = models.CharField(max_length=10, choices=UnitKind.choices, default=UnitKind.SCENARIO)
    scenario = models.ForeignKey(
        Scenario, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    response = models.ForeignKey(
        ScenarioResponse, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    response_error = models.TextField(blank=True)
    label = models.CharField(
        max_length=40, blank=True, help_text="Answer units: the name researchers see (no model)."
    )
    question_text = models.TextField(blank=True, help_text="Answer units: the question as asked.")
    answer_text = models.TextField(blank=True, help_text="Answer units: the answer (Markdown).")
    answer_b_text = models.TextField(blank=True, help_text="Pairs: the second answer.")

    class Meta:
        ordering = ["scenario__name", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "scenario"], name="study_scenario_once"),
            models.CheckConstraint(
                condition=Q(kind=UnitKind.SCENARIO, scenario__isnull=False)
                | Q(kind=UnitKind.ANSWER, scenario__isnull=True, answer_b_text="")
                & ~Q(answer_text="")
                | Q(kind=UnitKind.PAIR, scenario__isnull=True)
                & ~Q(answer_text="")
                & ~Q(answer_b_text=""),
                name="unit_has_what_it_shows",
            ),
        ]

    def __str__(self):
        return f"{self.study_id}:{self.name}"

    @property
    def name(self) -> str:
        return self.scenario.name if self.scenario_id else self.label


class GenerationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


ACTIVE_GENERATION = [GenerationStatus.QUEUED, GenerationStatus.RUNNING]


class ResponseGeneration(Leased, Batched):
    """One "generate the missing responses" request: `model` asked, with one pinned prompt
    version, for a response to every scenario of the study that had none. Each of those is
    a `ScenarioResponseCall` that the bulk engine claims (apps/llm/engine.py); this row says
    how the request ended. (Its lease fields date from when it was itself the unit of work.)"""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="generations")
    model = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+")
    prompt = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    seed = models.BigIntegerField(default=0, help_text="Each call's seed is derived from it.")
    go_live = models.BooleanField(
        default=False, help_text="Put the draft study live once every scenario has a response."
    )
    status = models.CharField(
        max_length=10, choices=GenerationStatus.choices, default=GenerationStatus.QUEUED
    )
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "model"],
                condition=Q(status__in=ACTIVE_GENERATION),
                name="one_active_generation_per_study_and_model",
            )
        ]

    def __str__(self):
        return f"Responses from {self.model_id} for study {self.study_id} ({self.status})"


class ScenarioCallStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ScenarioResponseCall(Leased):
    """One call of a generation: the model asked for its response to one of the study's
    scenarios. A worker holds it under a lease while it asks."""

    generation = models.ForeignKey(
        ResponseGeneration, on_delete=models.CASCADE, related_name="calls"
    )
    study_scenario = models.ForeignKey(StudyScenario, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(
        max_length=10,
        choices=ScenarioCallStatus.choices,
        default=ScenarioCallStatus.PENDING,
    )
    seed = models.BigIntegerField(null=True, blank=True)
    response = models.ForeignKey(
        ScenarioResponse, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    error_kind = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["generation", "study_scenario"], name="one_call_per_generation_scenario"
            )
        ]

    def __str__(self):
        return f"{self.generation} / {self.study_scenario_id} ({self.status})"


class ItemKind(models.TextChoices):
    YES_NO = "yes_no", "Yes / no"
    SCALE = "scale", "Labelled scale"
    PAIR = "pair", "Which of two answers"


# A pair item's answers, first to last (the report reads "a", "b" and "equal").
PAIR_CHOICES = [("a", "Answer A"), ("b", "Answer B"), ("equal", "They help about the same")]


class ItemGroup(models.TextChoices):
    """What an item measures, as the published study grouped its items."""

    HELPFULNESS = "helpfulness", "Helpfulness"
    PRIVACY = "privacy", "Privacy"
    WOULD_USE = "would_use", "Would use"
    PRESENTATION = "presentation", "Presentation"
    PREFERENCE = "preference", "Preference between two answers"


class SurveyItem(models.Model):
    """A question asked about every scenario. `study` empty: the default set new studies copy."""

    study = models.ForeignKey(
        Study, null=True, blank=True, on_delete=models.CASCADE, related_name="items"
    )
    code = models.CharField(max_length=16, validators=[RegexValidator(r"^[A-Za-z0-9_]+$")])
    wording = models.TextField()
    kind = models.CharField(max_length=10, choices=ItemKind.choices)
    scale_labels = models.JSONField(
        default=list, blank=True, help_text="Scale items: one label per point, lowest first."
    )
    explanation_required = models.BooleanField(
        "asks for an explanation",
        default=True,
        help_text="Shows a box for an explanation, which must be filled in. Unticked, the item "
        "asks for none and shows no box (the published design asks none for H1).",
    )
    group = models.CharField(
        max_length=16,
        choices=ItemGroup.choices,
        blank=True,
        help_text="What the item measures, as the published study grouped its items "
        "(helpfulness, privacy); the survey report's rho per group takes the group's scale "
        "items. Empty: in no group.",
    )
    unit_kind = models.CharField(
        "asked of",
        max_length=10,
        choices=UnitKind.choices,
        default=UnitKind.SCENARIO,
        help_text="The units whose page shows the item.",
    )
    order = models.PositiveSmallIntegerField(default=0)
    attention_check = models.BooleanField(default=False)
    expected_value = models.CharField(
        max_length=16, blank=True, help_text="Attention checks: the only acceptable answer."
    )
    on_page = models.PositiveSmallIntegerField(
        default=1, help_text="Attention checks: the scenario page (1 = first) that shows it."
    )

    class Meta:
        ordering = ["order", "code"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "code"], name="item_code_once", nulls_distinct=False
            ),
            models.CheckConstraint(
                condition=Q(attention_check=False) | ~Q(expected_value=""),
                name="attention_check_has_answer",
            ),
        ]

    def __str__(self):
        return f"{self.code}: {self.wording[:60]}"

    @property
    def choices(self) -> list[tuple[str, str]]:
        if self.kind == ItemKind.YES_NO:
            return [("yes", "Yes"), ("no", "No")]
        if self.kind == ItemKind.PAIR:
            return PAIR_CHOICES
        return [(str(i), label) for i, label in enumerate(self.scale_labels, start=1)]


class ProxyRun(Run):
    """Models answering a study's survey as participants: each (model, run index) is a proxy
    `Participant` who answers every scenario's items, one call per scenario
    (`ProxyCall`), through the bulk engine (services/proxies.py)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="proxy_runs")
    model_configs = models.ManyToManyField(ModelConfig, related_name="+")
    runs_per_model = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    temperature = models.DecimalField(
        max_digits=3,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(2)],
        help_text="Empty: each provider's default, as the published study left it.",
    )
    # A sweep: variants of one model, each a proxy of its own in the report (services/
    # proxies.py, proxy_sweep_create): one per temperature listed, and, with `sweep_personas`,
    # a persona for each person who finished the study.
    sweep_temperatures = models.JSONField(
        default=list, blank=True, help_text="A sweep's temperatures, as decimal strings."
    )
    sweep_personas = models.BooleanField(
        default=False,
        help_text="A sweep: one proxy for each person who finished, given that person's "
        "answers to the demographic items (never their ratings).",
    )

    class Meta(Run.Meta):
        pass

    @property
    def is_sweep(self) -> bool:
        return bool(self.sweep_temperatures) or self.sweep_personas

    def __str__(self):
        return f"Proxy run {self.pk} of study {self.study_id} ({self.status})"


class ParticipantKind(models.TextChoices):
    HUMAN = "human", "Person (Prolific)"
    PROXY = "proxy", "Proxy model"


class ParticipantStatus(models.TextChoices):
    ACTIVE = "active", "Taking part"
    FINISHED = "finished", "Finished"
    NO_CONSENT = "no_consent", "Did not consent"
    FULL = "full", "Arrived when the study was full"
    RETURNED = "returned", "Returned"


class ReviewStatus(models.TextChoices):
    PENDING = "pending", "Not reviewed"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class RejectionCategory(models.TextChoices):
    """Prolific's rejection categories (its API's `rejection_category` values)."""

    TOO_QUICKLY = "TOO_QUICKLY", "Completed too quickly"
    TOO_SLOWLY = "TOO_SLOWLY", "Completed too slowly"
    FAILED_INSTRUCTIONS = "FAILED_INSTRUCTIONS", "Did not follow instructions"
    INCOMP_LONGITUDINAL = "INCOMP_LONGITUDINAL", "Did not complete the longitudinal study"
    FAILED_CHECK = "FAILED_CHECK", "Failed attention checks"
    LOW_EFFORT = "LOW_EFFORT", "Low effort"
    MALINGERING = "MALINGERING", "Malingering"
    NO_CODE = "NO_CODE", "No completion code"
    BAD_CODE = "BAD_CODE", "Wrong completion code"
    NO_DATA = "NO_DATA", "No data"
    UNSUPP_DEVICE = "UNSUPP_DEVICE", "Unsupported device"
    OTHER = "OTHER", "Other"


class AgeBand(models.TextChoices):
    A18 = "18-24", "18-24"
    A25 = "25-34", "25-34"
    A35 = "35-44", "35-44"
    A45 = "45-54", "45-54"
    A55 = "55-64", "55-64"
    A65 = "65+", "65 or older"
    NO_SAY = "no_say", "Prefer not to say"


class Gender(models.TextChoices):
    WOMAN = "woman", "Woman"
    MAN = "man", "Man"
    NON_BINARY = "non_binary", "Non-binary"
    SELF = "self_described", "I describe myself another way"
    NO_SAY = "no_say", "Prefer not to say"


class Education(models.TextChoices):
    BELOW_HS = "below_high_school", "Less than high school"
    HS = "high_school", "High school or equivalent"
    SOME_COLLEGE = "some_college", "Some college, no degree"
    ASSOCIATE = "associate", "Associate degree"
    BACHELOR = "bachelor", "Bachelor's degree"
    MASTER = "master", "Master's degree"
    DOCTORATE = "doctorate", "Doctorate or professional degree"
    NO_SAY = "no_say", "Prefer not to say"


class Income(models.TextChoices):
    BELOW_25 = "<25k", "Less than $25,000"
    I25 = "25-50k", "$25,000-$49,999"
    I50 = "50-75k", "$50,000-$74,999"
    I75 = "75-100k", "$75,000-$99,999"
    I100 = "100-150k", "$100,000-$149,999"
    ABOVE_150 = "150k+", "$150,000 or more"
    NO_SAY = "no_say", "Prefer not to say"


class Participant(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    kind = models.CharField(
        max_length=5, choices=ParticipantKind.choices, default=ParticipantKind.HUMAN
    )
    prolific_pid = models.CharField("PROLIFIC_PID", max_length=24, blank=True)
    prolific_study_id = models.CharField("STUDY_ID", max_length=24, blank=True)
    prolific_session_id = models.CharField("SESSION_ID", max_length=24, blank=True)
    model = models.ForeignKey(
        ModelConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    run_index = models.PositiveIntegerField(null=True, blank=True)
    proxy_run = models.ForeignKey(
        ProxyRun, null=True, blank=True, on_delete=models.CASCADE, related_name="participants"
    )
    variant = models.CharField(
        max_length=60,
        blank=True,
        help_text="Proxies of a sweep: the variant this one is (its temperature, or a persona). "
        "Empty: the model as the run asked it.",
    )
    temperature = models.DecimalField(
        max_digits=3,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(2)],
        help_text="Proxies of a sweep: the temperature its calls use (empty: the run's).",
    )
    # A persona proxy is given this person's answers to the demographic items, copied into its
    # own age, gender, education and income, and nothing else of theirs (never a rating).
    persona_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    simulated = models.BooleanField(
        default=False,
        help_text="Answers made up by the demo to stand in for people; never a real participant.",
    )
    # Rotated each time the Prolific link is opened: the browser that opened it last holds
    # the survey; any other browser is sent back to the link.
    browser_key = models.CharField(max_length=32, default=new_key, editable=False)
    status = models.CharField(
        max_length=10, choices=ParticipantStatus.choices, default=ParticipantStatus.ACTIVE
    )
    attention_failed = models.BooleanField(default=False)
    completion_code = models.CharField(max_length=32, blank=True)
    age = models.CharField(max_length=16, choices=AgeBand.choices, blank=True)
    gender = models.CharField(max_length=16, choices=Gender.choices, blank=True)
    education = models.CharField(max_length=20, choices=Education.choices, blank=True)
    income = models.CharField(max_length=16, choices=Income.choices, blank=True)
    review_status = models.CharField(
        max_length=10, choices=ReviewStatus.choices, default=ReviewStatus.PENDING
    )
    rejection_category = models.CharField(
        max_length=20, choices=RejectionCategory.choices, blank=True
    )
    rejection_message = models.TextField(blank=True, max_length=REJECTION_MESSAGE_MAX_CHARS)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    consented_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "prolific_pid"],
                condition=Q(kind=ParticipantKind.HUMAN),
                name="participant_pid_once",
            ),
            models.UniqueConstraint(
                fields=["study", "model", "run_index"],
                condition=Q(kind=ParticipantKind.PROXY),
                name="participant_proxy_run_once",
            ),
            models.CheckConstraint(
                condition=Q(kind=ParticipantKind.PROXY) | ~Q(prolific_pid=""), name="human_has_pid"
            ),
        ]

    def __str__(self):
        return self.prolific_pid or f"{self.model} #{self.run_index}"

    @property
    def seconds_taken(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.created_at).total_seconds()


class AssignmentStatus(models.TextChoices):
    RESERVED = "reserved", "Reserved"
    COMPLETED = "completed", "Completed"
    EXPIRED = "expired", "Expired"
    RELEASED = "released", "Released (returned)"
    REJECTED = "rejected", "Rejected"
    # A proxy model's rating: never one of the `ratings_per_scenario` that people give, so
    # no count of completed or reserved ratings (services/reservation.py) sees it.
    PROXY = "proxy", "Answered by a proxy model"


class Assignment(models.Model):
    """A scenario handed to a participant. Counts towards the scenario's k while completed,
    or reserved and not yet past `reserved_until`."""

    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="assignments"
    )
    study_scenario = models.ForeignKey(
        StudyScenario, on_delete=models.PROTECT, related_name="assignments"
    )
    position = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=10, choices=AssignmentStatus.choices, default=AssignmentStatus.RESERVED
    )
    reserved_at = models.DateTimeField()
    reserved_until = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "study_scenario"], name="assignment_scenario_once"
            ),
            models.UniqueConstraint(
                fields=["participant", "position"], name="assignment_position_once"
            ),
        ]
        indexes = [
            models.Index(fields=["study_scenario", "status"], name="assignment_count"),
            models.Index(
                fields=["reserved_until"],
                condition=Q(status=AssignmentStatus.RESERVED),
                name="assignment_expiry",
            ),
        ]

    def __str__(self):
        return f"{self.participant} #{self.position}"


class Answer(models.Model):
    # Saved by statements written by hand, not by the ORM (services/answers.py: ANSWER_UPSERT,
    # ANSWER_UPSERT_BOUND): a new NOT NULL column without a database default must be added to
    # their column lists too (tests/surveys/test_hand_written_sql.py fails until it is).
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(SurveyItem, on_delete=models.PROTECT, related_name="answers")
    value = models.CharField(max_length=16, blank=True)
    explanation = models.TextField(blank=True, max_length=MAX_EXPLANATION)
    first_saved_at = models.DateTimeField()
    saved_at = models.DateTimeField()
    save_count = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["assignment_id", "item__order"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="answer_once_per_item")
        ]

    def __str__(self):
        return f"{self.assignment} {self.item.code}={self.value}"


class Page(models.TextChoices):
    CONSENT = "consent", "Consent"
    INSTRUCTIONS = "instructions", "Instructions"
    SCENARIO = "scenario", "Scenario"
    DEMOGRAPHICS = "demographics", "About you"


class PageTime(models.Model):
    """When a participant first saw a page and when they left it by submitting it."""

    # First saved by a statement written by hand, not by the ORM (services/answers.py:
    # PAGE_TIME_SHOWN): a new NOT NULL column without a database default must be added to its
    # column list too (tests/surveys/test_hand_written_sql.py fails until it is).
    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="page_times"
    )
    page = models.CharField(max_length=12, choices=Page.choices)
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    shown_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant_id", "shown_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "page", "assignment"],
                name="page_time_once",
                nulls_distinct=False,
            )
        ]

    def __str__(self):
        return f"{self.participant_id} {self.page}"

    @property
    def seconds(self) -> float | None:
        if self.submitted_at is None:
            return None
        return (self.submitted_at - self.shown_at).total_seconds()


class ProxyCallStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ProxyCall(Leased):
    """One proxy participant asked about one scenario: every item in one call. Recorded as
    an `Assignment` (status proxy) with an `Answer` per item, as people's ratings are."""

    run = models.ForeignKey(ProxyRun, on_delete=models.CASCADE, related_name="calls")
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="+")
    study_scenario = models.ForeignKey(StudyScenario, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=10, choices=ProxyCallStatus.choices, default=ProxyCallStatus.PENDING
    )
    seed = models.BigIntegerField()
    error_kind = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    reserved_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "study_scenario"], name="proxy_call_once"
            )
        ]
        indexes = [models.Index(fields=["run", "status"], name="proxy_call_run_status")]

    def __str__(self):
        return f"{self.participant} / {self.study_scenario_id} ({self.status})"


# The states the bulk engine moves a proxy call through (apps/llm/leases.py).
PROXY_CALL_STATES = LeaseStates(
    waiting=ProxyCallStatus.PENDING,
    running=ProxyCallStatus.RUNNING,
    failed=ProxyCallStatus.FAILED,
)
