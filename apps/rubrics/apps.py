from django.apps import AppConfig


class RubricsConfig(AppConfig):
    """Rubrics, their criteria, review, versions and scoring. Builds on questions and runs."""

    name = "apps.rubrics"
    label = "rubrics"
    verbose_name = "Rubrics"

    def ready(self):
        from django.db.models import Exists, OuterRef

        from apps.accounts.home import home_panel_register
        from apps.accounts.roles import Role
        from apps.runs.selection import question_condition_register

        from .models import Rubric, RubricState
        from .services import drafting  # noqa: F401  (registers the engine's work)

        question_condition_register(
            key="approved_rubric",
            label="With an approved rubric",
            apply=lambda questions: questions.filter(
                Exists(Rubric.objects.filter(question=OuterRef("pk"), state=RubricState.APPROVED))
            ),
        )

        home_panel_register(
            key="rubrics.expert",
            roles={Role.EXPERT},
            template="rubrics/home_expert_panel.html",
            order=100,
        )
        home_panel_register(
            key="rubrics.reviewer",
            roles={Role.REVIEWER},
            template="rubrics/home_reviewer_panel.html",
            order=200,
        )
