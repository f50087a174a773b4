import json
import secrets

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.accounts.services import user_create
from apps.demo.answer_studies import demo_answer_study_load
from apps.demo.questions import demo_question_bank_load
from apps.demo.rubrics import demo_rubrics_load
from apps.demo.runs import demo_runs_load
from apps.demo.surveys import PARTICIPANT_QUERY, demo_survey_report_load, demo_surveys_load
from apps.llm.models import ModelConfig, ModelKind

DEMO_USERS = [
    ("expert", "Erin", "Expert", [Role.EXPERT]),
    ("expert2", "Emeka", "Expert", [Role.EXPERT]),
    ("reviewer", "Rosa", "Reviewer", [Role.EXPERT, Role.REVIEWER]),
    ("researcher", "Rahul", "Researcher", [Role.RESEARCHER]),
    # Screening and strata labels take two researchers.
    ("researcher2", "Rin", "Researcher", [Role.RESEARCHER]),
]


# Served by the offline provider that `make run` starts: every feature works with no API key.
OFFLINE_MODELS = [
    ("Offline Terse (demo)", "offline-terse", ModelKind.CHAT),
    ("Offline Thorough (demo)", "offline-thorough", ModelKind.CHAT),
    ("Offline Friendly (demo)", "offline-friendly", ModelKind.CHAT),
    ("Offline Grader (demo)", "offline-grader", ModelKind.CHAT),
    # For the cosine of embeddings of the rewrites (the rewriting pages).
    ("Offline Embed (demo)", "offline-embed", ModelKind.EMBEDDING),
]


class Command(BaseCommand):
    help = "Create the demo users and data (idempotent) and print the demo logins."

    def handle(self, *args, **options):
        if settings.PRODUCTION:
            raise CommandError("The demo is for development only; DJANGO_ENV is production.")
        logins_file = settings.BASE_DIR / ".data" / "demo-logins.json"
        logins_file.parent.mkdir(parents=True, exist_ok=True)
        logins = json.loads(logins_file.read_text()) if logins_file.exists() else {}
        for username, first, last, roles in DEMO_USERS:
            if User.objects.filter(username=username).exists():
                continue
            password = secrets.token_urlsafe(9)
            user_create(
                username=username,
                password=password,
                roles=roles,
                first_name=first,
                last_name=last,
                email=f"{username}@example.org",
            )
            logins[username] = password
        for display_name, name, kind in OFFLINE_MODELS:
            ModelConfig.objects.update_or_create(
                display_name=display_name,
                defaults={
                    "family": "Offline demo",
                    "version": "1",
                    "litellm_model": f"openai/{name}",
                    "kind": kind,
                    "api_base": settings.OFFLINE_LLM_URL,
                    "max_concurrent": 16,
                    "timeout_seconds": 30,
                    "input_price_per_mtok": 0,
                    "output_price_per_mtok": 0,
                },
            )
        self.stdout.write(f"Rubric demo: {demo_rubrics_load()}")
        self.stdout.write(f"Question-bank demo: {demo_question_bank_load()}")
        summary, _run, grading = demo_runs_load()
        self.stdout.write(f"Model-run demo: {summary}")
        study, state = demo_surveys_load()
        self.stdout.write(
            f"Survey demo ({state}): participants start at /s/{study.slug}/?{PARTICIPANT_QUERY}"
        )
        self.stdout.write(f"Survey report demo: {demo_survey_report_load()}")
        self.stdout.write(f"Answer-study demo: {demo_answer_study_load(grading=grading)}")
        logins_file.write_text(json.dumps(logins, indent=2))
        logins_file.chmod(0o600)
        self.stdout.write("Demo logins (also in .data/demo-logins.json):")
        for username, _first, _last, roles in DEMO_USERS:
            password = logins.get(username, "(changed; not known to the demo)")
            role_names = ", ".join(str(r) for r in roles)
            self.stdout.write(f"  {username:<11} {password:<16} {role_names}")
