"""Reports and exports over a finished rubric benchmark at the published size.

    .venv/bin/python benchmarks/reports_and_exports.py           # 450 questions x 18 models x 5
    .venv/bin/python benchmarks/reports_and_exports.py --quick   # 40 questions x 6 models x 5

Against a database of its own (assay_bench_reports, created, migrated and dropped on the
server of DATABASE_URL) and Redis db 6 (the cache the report's tables may use), DEBUG off:

1. seeded set-based (INSERT ... SELECT, no ORM row by row): 450 questions in the nine
   topics, most of them labelled, each with an approved rubric of 12 criteria; 18 models in
   four families; one finished sampling run of 450 x 18 x 5 = 40,500 answers whose lengths
   vary by model; two finished checklist grading runs over it (two graders), each with one
   judgment per answer and criterion (486,000 each, 972,000 in all), verdicts drawn from a
   per-model ability, a per-topic and per-question difficulty, a per-criterion ease and noise
   (the second grader disagrees with the first now and then), a few errored calls; every
   answer's score by the scoring rule, in SQL, a sample of them checked against
   `apps.rubrics.scoring`; a calibration set graded by two experts;
2. the baselines: a raw `COPY (SELECT ...) TO STDOUT (FORMAT csv)` of every judgment row
   through psycopg 3 on a fresh connection, every chunk read, the fastest of three (two
   before the exports, one after): for the console, with the columns, joins and order of
   `JudgmentAdmin`'s export (the SELECT its changelist queryset compiles to); for the API,
   the plain SELECT of its `JUDGMENT_COLUMNS`. Each export's own statements are recorded as
   psycopg is handed them, and their FROM, joins and ORDER BY compared with the baseline's;
3. the console's "Export selected rows as CSV" on /admin/grading/judgment/ with every row
   selected (`select_across`), and the API's streamed export /api/v1/judgments/export/, each
   in a fresh process (Django's test client in process, a researcher signed in / a bearer
   token, one small request first, untimed), the whole body read: time against the COPY's,
   and the process's peak RSS (ru_maxrss) beside its RSS before the request;
4. the API's paginated list /api/v1/judgments/?grading_run=N&page_size=S&layout=L followed
   by its `next` links over every row of one grading run, through the same test client in a
   fresh process, in the largest pages the API serves and in pages of 1,000, in both layouts
   (arrays first: the walk the target is judged on): rows per second served (the walk's time
   less the client's `json.loads` of each page, as the export's CSV is not parsed either)
   against the export's, and with the decoding;
5. `benchmark_report_for` on each grading run, the cache cleared before each of 5 runs:
   the median time to compute every table and every figure's table (no SVG drawn);
6. what a fresh process of the product holds before it serves anything, and which of its
   imports bring in heavy libraries (scikit-learn, scipy, pandas, ...), if any.

Targets (the issue's): report tables <= 5 s; an export <= 3 x the COPY with peak RSS <=
200 MB; the paginated list >= 0.5 x the streamed export's rows per second. A measurement
whose code is not there is reported as not available, with the reason. A missed target
gets a cProfile of what missed it in the output (the report's tables one within a fifth of
missing, too). Prints a markdown report (also
benchmarks/output/reports_and_exports.md); a full-size run adds it, dated, under
"## Reports and exports" in benchmarks/RESULTS.md.
"""

import argparse
import cProfile
import datetime as dt
import importlib
import io
import json
import os
import pstats
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DB_NAME = "assay_bench_reports"
REDIS_DB = 6
REPEATS = 5
TARGET_REPORT_S, TARGET_EXPORT_RATIO, TARGET_RSS_MB, TARGET_LIST_RATIO = 5.0, 3.0, 200, 0.5
PAGE_SIZE = 1000  # besides the largest pages the API serves
LIST_LAYOUTS = ("arrays", "objects")  # the first is the one the target is judged on
LIST_ROWS_MAX = 0  # 0: walk every page of the grading run
RESEARCHER = "bench-researcher"
CLIENT_NAME = "reports-and-exports benchmark"
ADMIN_URL = "/admin/grading/judgment/"
API_LIST_URL = "/api/v1/judgments/"
API_EXPORT_URL = "/api/v1/judgments/export/"

# Four families of answering models: (family, version, how long its answers run in
# sentences, its ability on the logit scale). Quick runs take them in turn across families.
MODELS = [
    ("GPT", "4.1", 16, 0.9),
    ("GPT", "4.1 mini", 12, 0.5),
    ("GPT", "4o", 14, 0.6),
    ("GPT", "4o mini", 10, 0.2),
    ("GPT", "o3", 22, 1.0),
    ("Claude", "Opus 4", 24, 1.1),
    ("Claude", "Sonnet 4", 18, 0.8),
    ("Claude", "Sonnet 3.7", 17, 0.6),
    ("Claude", "Haiku 3.5", 9, 0.1),
    ("Claude", "Haiku 4.5", 11, 0.4),
    ("Gemini", "2.5 Pro", 26, 0.9),
    ("Gemini", "2.5 Flash", 15, 0.5),
    ("Gemini", "2.0 Flash", 11, 0.1),
    ("Gemini", "2.5 Flash-Lite", 8, -0.1),
    ("Llama", "4 Maverick", 13, 0.2),
    ("Llama", "4 Scout", 10, -0.1),
    ("Llama", "3.3 70B", 12, -0.2),
    ("Llama", "3.1 8B", 7, -0.7),
]
GRADERS = [
    ("GPT", "4.1", "openai/offline-grader-gpt-4.1"),
    ("Claude", "Sonnet 4", "openai/offline-grader-claude-sonnet-4"),
]
ERRORED_CALLS = 0.002  # checklist calls that ended in an explicit error (all their judgments)
SECOND_GRADER_FLIPS = 0.08  # how often the second grader's verdict differs from the first's

SENTENCES = [
    "Start by changing the password of the account from a device you trust, not the one you suspect.",
    "Turn on two-step verification with an authenticator app rather than text messages if you can.",
    "Check the account's recent sign-in activity and sign out every session you do not recognise.",
    "Look at the recovery email address and phone number and make sure both are still yours.",
    "If the service offers backup codes, print them or keep them somewhere offline and safe.",
    "Do not reply to the message, click its links or call the number it gives you.",
    "Report the profile to the platform using its own reporting tool, and keep screenshots first.",
    "Your bank's fraud line, printed on the back of your card, is the right number to call.",
    "A password manager makes it practical to give every account a long and different password.",
    "Keep your phone's operating system and apps up to date so that known holes are closed.",
    "Review which apps have access to your account and remove the ones you no longer use.",
    "If you think someone has physical access to your phone, check it for apps you did not install.",
    "It is normal for recovery to take a few days, and the form is the only official way back in.",
    "Be wary of anyone who contacts you offering to recover the account for a fee.",
    "You can ask the platform to remove personal information that was posted without consent.",
    "Keeping a dated log of incidents helps if you later go to the police or to a lawyer.",
    "Most providers let you download a copy of your data, which shows what they hold about you.",
    "Freezing your credit with the main bureaus stops new accounts being opened in your name.",
    "A factory reset removes most stalkerware, but back up your photos and messages first.",
    "Browser extensions can read the pages you visit, so keep only the ones you really need.",
    "Public Wi-Fi is fine for most browsing today, as long as the site uses HTTPS.",
    "Blocking the account stops it contacting you, and the person is not told that you did it.",
    "If money has already left your account, tell your bank straight away: speed matters here.",
    "Scammers often create urgency; a genuine company will not rush you to pay in gift cards.",
    "Use the privacy settings to limit who can see your friends list, posts and contact details.",
    "An email that passes the provider's spam filter can still be a phishing attempt.",
    "You do not need to pay for antivirus on a modern phone; the built-in protection is enough.",
    "Changing the router's default admin password closes an easy way into your home network.",
    "Sharing your location should be a choice you make per app, not a default you forget about.",
    "If you feel unsafe, local support organisations can help you plan the next steps.",
]
MET = [
    "The response says this explicitly and early, with a concrete step the person can take.",
    "It covers this point directly, in plain language the asker can act on.",
    "The answer includes this advice and explains briefly why it matters in this situation.",
    "This is addressed in the second paragraph, where the response walks through the settings.",
    "The response does this: it names the official route and warns against the alternatives.",
    "It meets the criterion, although the point is made in passing rather than as a main step.",
]
NOT_MET = [
    "The response does not mention this anywhere; it focuses on other steps instead.",
    "This point is missing: the answer stays general and never gets to it.",
    "The answer touches on a related idea but does not actually give this advice.",
    "Nothing in the response addresses this, so the criterion is not met.",
    "It skips this entirely and moves on to account settings that the question did not ask about.",
    "The response implies the opposite in its closing lines, so this is not met.",
]
SECOND = [
    "The rest of the response is consistent with this.",
    "It would have been better placed at the start.",
    "No other part of the answer changes this judgment.",
    "The wording is clear enough for a non-expert to follow.",
    "This matches the advice the rubric expects for this kind of question.",
]
HASH_KEY = 10_000_000  # response id x this + criterion id: a key per (answer, criterion)


def with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def rss_mb() -> float:
    """This process's resident set now, in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- seeding ------------------------------------------------------------------------------------


SEED_FUNCTIONS = """
-- A uniform number in [0, 1) for a key and a stream: the same draw whenever it is asked for,
-- so that both graders see the same answer quality and a rerun seeds the same data.
CREATE OR REPLACE FUNCTION pg_temp.u(k bigint, s bigint) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (hashint8extended(k, s) & 4503599627370495)::float8 / 4503599627370496 $$;
-- A standard normal from two uniforms (Box-Muller).
CREATE OR REPLACE FUNCTION pg_temp.z(k bigint, s bigint) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT sqrt(-2 * ln(1 - pg_temp.u(k, s))) * cos(2 * pi() * pg_temp.u(k, s + 1000)) $$;
"""


class Seeded:
    """What the measurements need of the seeded data."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def seed_users():
    """Researchers and an expert. They never sign in with a password (the measuring processes
    use `force_login` and a token), so theirs is random."""
    import secrets

    from apps.accounts.roles import Role
    from apps.accounts.services import user_create

    def make(username, role):
        return user_create(username=username, password=secrets.token_urlsafe(), roles=[role])

    return (
        make(RESEARCHER, Role.RESEARCHER),
        make("bench-researcher-2", Role.RESEARCHER),
        make("bench-expert", Role.EXPERT),
    )


def seed_models() -> tuple[list, list]:
    from decimal import Decimal

    from apps.llm.models import ModelConfig

    def slug(text: str) -> str:
        return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")

    answering = ModelConfig.objects.bulk_create(
        ModelConfig(
            display_name=f"{family} {version}",
            family=family,
            version=version,
            litellm_model=f"openai/offline-{slug(family)}-{slug(version)}",
            input_price_per_mtok=Decimal("2.50"),
            output_price_per_mtok=Decimal("10.00"),
        )
        for family, version, _length, _ability in MODELS
    )
    graders = ModelConfig.objects.bulk_create(
        ModelConfig(
            display_name=f"Grader: {family} {version}",
            family=family,
            version=version,
            litellm_model=litellm,
            input_price_per_mtok=Decimal("2.00"),
            output_price_per_mtok=Decimal("8.00"),
        )
        for family, version, litellm in GRADERS
    )
    return answering, graders


def model_order(count: int) -> list[int]:
    """Indexes into MODELS: all of them, or `count` taken in turn across the families."""
    if count >= len(MODELS):
        return list(range(len(MODELS)))
    families = {}
    for i, (family, *_rest) in enumerate(MODELS):
        families.setdefault(family, []).append(i)
    order, k = [], 0
    while len(order) < count:
        for members in families.values():
            if k < len(members) and len(order) < count:
                order.append(members[k])
        k += 1
    return sorted(order)


def seed(*, questions: int, models: int, samples: int, note) -> Seeded:
    """The whole benchmark's data; see the module's docstring. Set-based, in one transaction
    per step, with the foreign keys' triggers off for the big inserts (every id comes from a
    join over the rows it refers to)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.grading.models import GradingMode, GradingRun
    from apps.llm.models import Purpose, RunStatus
    from apps.llm.selectors import prompt_current
    from apps.runs.models import SamplingRun
    from benchmarks.run_at_scale import build_questions

    t0 = time.monotonic()
    researcher, second, expert = seed_users()
    with transaction.atomic():
        bank = build_questions(questions)
    with connection.cursor() as c:
        # Most questions labelled and verified; every tenth left unlabelled (no need labels).
        c.execute(
            """UPDATE questions_question SET label_status = 'verified', labelled_by_id = %s,
                   verified_by_id = %s WHERE id %% 10 <> 0""",
            [researcher.pk, second.pk],
        )
        c.execute(
            """UPDATE questions_question SET needs_sensemaking = false, needs_guidance = false,
                   mentions_prior_attempt = false
               WHERE id %% 10 = 0""",
            [],
        )
    answering, graders = seed_models()
    chosen = [answering[i] for i in model_order(models)]
    now = timezone.now()
    launched = now - dt.timedelta(hours=6)
    run = SamplingRun.objects.create(
        name="Reports benchmark: published-size run",
        status=RunStatus.FINISHED,
        prompt=prompt_current(purpose=Purpose.SAMPLE),
        samples_per_item=samples,
        launched_at=launched,
        finished_at=launched + dt.timedelta(minutes=20),
        created_by=researcher,
    )
    run.model_configs.set(chosen)
    run.questions.set(bank)
    grading_runs = [
        GradingRun.objects.create(
            name=f"Reports benchmark: graded by {g.display_name}",
            sampling_run=run,
            grader=g,
            prompt=prompt_current(purpose=Purpose.GRADE_CHECKLIST),
            mode=GradingMode.CHECKLIST,
            params={"temperature": 0},
            status=RunStatus.FINISHED,
            created_by=researcher,
            launched_at=launched + dt.timedelta(minutes=30 + 40 * k),
            finished_at=launched + dt.timedelta(minutes=60 + 40 * k),
        )
        for k, g in enumerate(graders)
    ]
    note(f"  questions, rubrics, models and runs in {time.monotonic() - t0:.1f} s")

    abilities = {m.pk: MODELS[i][3] for i, m in zip(model_order(models), chosen, strict=True)}
    lengths = {m.pk: MODELS[i][2] for i, m in zip(model_order(models), chosen, strict=True)}
    with transaction.atomic(), connection.cursor() as c:
        c.execute("SET LOCAL session_replication_role = replica")
        c.execute("SET LOCAL synchronous_commit = off")
        c.execute(SEED_FUNCTIONS)
        c.execute(
            "CREATE TEMP TABLE bench_model (id bigint, ability float8, sentences int) ON COMMIT DROP"
        )
        c.executemany(
            "INSERT INTO bench_model VALUES (%s, %s, %s)",
            [(pk, abilities[pk], lengths[pk]) for pk in abilities],
        )
        t = time.monotonic()
        c.execute(
            """
            INSERT INTO runs_response (run_id, model_id, question_id, sample_index, seed, status,
                text, input_tokens, output_tokens, cost_usd, latency_ms, error, error_kind,
                attempts, lease_owner, created_at, started_at, completed_at)
            SELECT %(run)s, m.id, q.id, s, (hashint8extended(q.id * 1000 + m.id * 10 + s, 5) & 2147483647),
                'done', x.text, 40 + length(q.text) / 4, length(x.text) / 4,
                round((40 + length(q.text) / 4) * 2.5e-6 + length(x.text) / 4 * 1e-5, 6),
                800 + length(x.text) * 6, '', '', 1, '', %(launched)s,
                %(launched)s + (q.id * 7 + s) * interval '10 ms',
                %(launched)s + (q.id * 7 + s) * interval '10 ms' + interval '3 s'
            FROM questions_question q CROSS JOIN bench_model m CROSS JOIN generate_series(0, %(samples)s - 1) s
            CROSS JOIN LATERAL (
                SELECT string_agg((%(sentences)s::text[])[1 + floor(pg_temp.u(q.id * 100000 + m.id * 100 + s * 10 + g, 11) * %(n)s)::int], ' ') AS text
                FROM generate_series(1, greatest(3, round(m.sentences * (0.6 + 0.8 * pg_temp.u(q.id * 1000 + m.id * 10 + s, 12)))::int)) g
            ) x
            ORDER BY q.id, m.id, s
            """,
            {
                "run": run.pk,
                "launched": launched,
                "samples": samples,
                "sentences": SENTENCES,
                "n": len(SENTENCES),
            },
        )
        note(f"  {c.rowcount:,} responses in {time.monotonic() - t:.1f} s")
        # Per-question difficulty: the topic's and the question's own, on the logit scale.
        c.execute(
            """CREATE TEMP TABLE bench_question ON COMMIT DROP AS
               SELECT q.id, r.id AS rubric_id,
                      0.5 * pg_temp.z(q.topic_id, 21) + 0.6 * pg_temp.z(q.id, 22) AS difficulty
               FROM questions_question q JOIN rubrics_rubric r ON r.question_id = q.id
                    AND r.state = 'approved'"""
        )
        for k, g in enumerate(grading_runs):
            t = time.monotonic()
            c.execute(
                """
                INSERT INTO grading_checklistcall (grading_run_id, response_id, rubric_id, status,
                    raw_output, input_tokens, output_tokens, cost_usd, latency_ms, error_kind,
                    error, attempts, lease_owner, started_at, completed_at)
                SELECT %(g)s, r.id, bq.rubric_id,
                    CASE WHEN e.bad THEN 'error' ELSE 'done' END, '',
                    r.output_tokens + 700, 650, round((r.output_tokens + 700) * 2e-6 + 650 * 8e-6, 6),
                    2500 + r.output_tokens * 3,
                    CASE WHEN e.bad THEN 'invalid_output' ELSE '' END,
                    CASE WHEN e.bad THEN 'The grader''s answer failed validation after 3 attempts: '
                         || 'verdicts must list every criterion once.' ELSE '' END,
                    CASE WHEN e.bad THEN 3 ELSE 1 END, '',
                    %(start)s + r.id * interval '40 ms', %(start)s + r.id * interval '40 ms' + interval '4 s'
                FROM runs_response r JOIN bench_question bq ON bq.id = r.question_id
                CROSS JOIN LATERAL (SELECT pg_temp.u(r.id, 30 + %(k)s) < %(errored)s AS bad) e
                WHERE r.run_id = %(run)s ORDER BY r.id
                """,
                {
                    "g": g.pk,
                    "k": k,
                    "run": run.pk,
                    "start": g.launched_at,
                    "errored": ERRORED_CALLS,
                },
            )
            calls = c.rowcount
            # The verdict: earned (a positive criterion met, a negative one avoided) with the
            # probability of the model's ability less the question's difficulty plus the
            # criterion's ease and the answer's own luck; the same draw for both graders, the
            # second flipping some. Negative criteria are mostly avoided, so easier.
            c.execute(
                """
                INSERT INTO grading_judgment (grading_run_id, response_id, criterion_id, rubric_id,
                    checklist_id, status, met, explanation, raw_output, error, error_kind, attempts,
                    lease_owner, input_tokens, output_tokens, latency_ms, completed_at)
                SELECT cc.grading_run_id, cc.response_id, cr.id, cc.rubric_id, cc.id, cc.status,
                    CASE WHEN cc.status = 'error' THEN NULL
                         WHEN cr.polarity = 'positive' THEN v.earned ELSE NOT v.earned END,
                    CASE WHEN cc.status = 'error' THEN ''
                         ELSE (CASE WHEN (cr.polarity = 'positive') = v.earned
                                    THEN (%(met)s::text[])[1 + floor(pg_temp.u(v.key, 41) * %(n_met)s)::int]
                                    ELSE (%(not_met)s::text[])[1 + floor(pg_temp.u(v.key, 41) * %(n_not)s)::int] END)
                              || CASE WHEN pg_temp.u(v.key, 42) < 0.6
                                      THEN ' ' || (%(second)s::text[])[1 + floor(pg_temp.u(v.key, 43) * %(n_second)s)::int]
                                      ELSE '' END END,
                    '',
                    CASE WHEN cc.status = 'error' THEN 'The checklist call failed: ' || cc.error ELSE '' END,
                    cc.error_kind, 0, '', 0, 0, 0, cc.completed_at
                FROM grading_checklistcall cc
                JOIN runs_response r ON r.id = cc.response_id
                JOIN bench_model m ON m.id = r.model_id
                JOIN bench_question bq ON bq.id = r.question_id
                JOIN rubrics_criterion cr ON cr.rubric_id = cc.rubric_id
                CROSS JOIN LATERAL (SELECT r.id * %(hk)s + cr.id AS key) k
                CROSS JOIN LATERAL (
                    SELECT k.key,
                        (pg_temp.u(k.key, 40) < 1 / (1 + exp(-(
                            m.ability - bq.difficulty + 0.4 * pg_temp.z(r.id, 23)
                            + 1.2 * pg_temp.z(cr.id, 24) + CASE WHEN cr.polarity = 'negative' THEN 2.0 ELSE 0 END
                            + CASE WHEN cr.kind = 'presentation' THEN 0.5 ELSE 0 END))))
                        <> (%(k)s = 1 AND pg_temp.u(k.key, 45) < %(flips)s) AS earned
                ) v
                WHERE cc.grading_run_id = %(g)s
                ORDER BY cc.id, cr."order", cr.id
                """,
                {
                    "g": g.pk,
                    "k": k,
                    "hk": HASH_KEY,
                    "met": MET,
                    "not_met": NOT_MET,
                    "second": SECOND,
                    "n_met": len(MET),
                    "n_not": len(NOT_MET),
                    "n_second": len(SECOND),
                    "flips": SECOND_GRADER_FLIPS,
                },
            )
            judgments = c.rowcount
            # What the grader answered, as the checklist call keeps it (the verdicts, in order).
            c.execute(
                """
                UPDATE grading_checklistcall cc SET raw_output = v.raw
                FROM (SELECT j.checklist_id, json_build_object('verdicts', json_agg(
                          json_build_object('id', cr."order", 'explanation', j.explanation, 'met', j.met)
                          ORDER BY cr."order"))::text AS raw
                      FROM grading_judgment j JOIN rubrics_criterion cr ON cr.id = j.criterion_id
                      WHERE j.grading_run_id = %(g)s AND j.status = 'done' GROUP BY j.checklist_id) v
                WHERE cc.id = v.checklist_id
                """,
                {"g": g.pk},
            )
            # Scores by the rule (apps/rubrics/scoring.py), for answers whose judgments are all
            # done: earned = the points of positives met and negatives avoided, over all points.
            c.execute(
                """
                INSERT INTO grading_responsescore (grading_run_id, response_id, rubric_id,
                    earned_points, max_points, score, breakdown, computed_at)
                SELECT %(g)s, s.response_id, s.rubric_id, s.earned, s.maximum,
                    s.earned::float8 / s.maximum,
                    jsonb_build_object('earned_points', s.earned, 'max_points', s.maximum,
                        'positive_factual_met', jsonb_build_array(s.pf_e, s.pf_t),
                        'negative_factual_avoided', jsonb_build_array(s.nf_e, s.nf_t),
                        'positive_presentation_met', jsonb_build_array(s.pp_e, s.pp_t),
                        'negative_presentation_avoided', jsonb_build_array(s.np_e, s.np_t)),
                    %(now)s
                FROM (
                    SELECT j.response_id, j.rubric_id,
                        coalesce(sum(cr.points) FILTER (WHERE e.earns), 0)::int AS earned,
                        sum(cr.points)::int AS maximum,
                        count(*) FILTER (WHERE e.grp = 'pf' AND e.earns)::int AS pf_e,
                        count(*) FILTER (WHERE e.grp = 'pf')::int AS pf_t,
                        count(*) FILTER (WHERE e.grp = 'nf' AND e.earns)::int AS nf_e,
                        count(*) FILTER (WHERE e.grp = 'nf')::int AS nf_t,
                        count(*) FILTER (WHERE e.grp = 'pp' AND e.earns)::int AS pp_e,
                        count(*) FILTER (WHERE e.grp = 'pp')::int AS pp_t,
                        count(*) FILTER (WHERE e.grp = 'np' AND e.earns)::int AS np_e,
                        count(*) FILTER (WHERE e.grp = 'np')::int AS np_t,
                        bool_and(j.status = 'done') AS all_done, count(*) AS n
                    FROM grading_judgment j JOIN rubrics_criterion cr ON cr.id = j.criterion_id
                    CROSS JOIN LATERAL (SELECT
                        CASE WHEN cr.polarity = 'positive' THEN j.met ELSE NOT j.met END AS earns,
                        left(cr.polarity, 1) || left(cr.kind, 1) AS grp) e
                    WHERE j.grading_run_id = %(g)s
                    GROUP BY j.response_id, j.rubric_id
                ) s
                WHERE s.all_done AND s.n = (SELECT count(*) FROM rubrics_criterion WHERE rubric_id = s.rubric_id)
                ORDER BY s.response_id
                """,
                {"g": g.pk, "now": g.finished_at},
            )
            note(
                f"  grading run {g.pk}: {calls:,} checklist calls, {judgments:,} judgments, "
                f"{c.rowcount:,} scores in {time.monotonic() - t:.1f} s"
            )

    t = time.monotonic()
    calibration = seed_calibration(
        run=run, grading_runs=grading_runs, models=chosen, second=second, expert=expert
    )
    note(f"  calibration: {calibration} expert judgments in {time.monotonic() - t:.1f} s")
    t = time.monotonic()
    from django.db import connection as conn

    conn.close()
    with conn.cursor() as c:
        for table in (
            "runs_response",
            "grading_checklistcall",
            "grading_judgment",
            "grading_responsescore",
            "rubrics_criterion",
            "questions_question",
        ):
            c.execute(f"VACUUM (ANALYZE) {table}")
        c.execute("CHECKPOINT")
    note(f"  VACUUM ANALYZE, CHECKPOINT in {time.monotonic() - t:.1f} s")
    return Seeded(
        run=run,
        grading_runs=grading_runs,
        models=chosen,
        researcher=researcher,
        questions=len(bank),
        samples=samples,
        seconds=time.monotonic() - t0,
    )


def seed_calibration(*, run, grading_runs, models, second, expert) -> int:
    """A calibration set as the published protocol makes one: one answer per question from
    the run's models, graded by two experts and adjudicated; both grading runs held against
    it. The experts agree with the first grader most of the time."""
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.grading.models import Calibration, CalibrationSet

    now = timezone.now()
    with transaction.atomic():
        cal = CalibrationSet.objects.create(
            name="Reports benchmark: calibration", sampling_run=run, second_grader=second, seed=7
        )
        cal.model_configs.set(models)
        with connection.cursor() as c:
            c.execute(SEED_FUNCTIONS)
            c.execute(
                """
                INSERT INTO grading_calibrationsample (calibration_set_id, question_id, response_id,
                    rubric_id, author_id, first_done_at, second_done_at, resolved_at)
                SELECT DISTINCT ON (r.question_id) %(cal)s, r.question_id, r.id, rb.id, %(expert)s,
                    %(now)s, %(now)s, %(now)s
                FROM runs_response r JOIN rubrics_rubric rb ON rb.question_id = r.question_id
                     AND rb.state = 'approved'
                WHERE r.run_id = %(run)s
                ORDER BY r.question_id, pg_temp.u(r.id, 60)
                """,
                {"cal": cal.pk, "run": run.pk, "expert": expert.pk, "now": now},
            )
            c.execute(
                """
                INSERT INTO grading_expertjudgment (sample_id, criterion_id, first_met, first_by_id,
                    first_note, second_met, second_by_id, second_note, final_met, resolved_by_id,
                    resolution_note, updated_at)
                SELECT s.id, j.criterion_id, f.first, %(expert)s, '', f.second, %(second)s, '',
                    CASE WHEN f.first = f.second THEN f.first ELSE j.met END,
                    CASE WHEN f.first = f.second THEN NULL ELSE %(second)s END,
                    CASE WHEN f.first = f.second THEN '' ELSE 'Agreed after discussion.' END, %(now)s
                FROM grading_calibrationsample s
                JOIN grading_judgment j ON j.response_id = s.response_id AND j.grading_run_id = %(g)s
                CROSS JOIN LATERAL (SELECT
                    coalesce(j.met, false) <> (pg_temp.u(j.id, 61) < 0.1) AS first,
                    coalesce(j.met, false) <> (pg_temp.u(j.id, 62) < 0.12) AS second) f
                WHERE s.calibration_set_id = %(cal)s
                """,
                {
                    "cal": cal.pk,
                    "g": grading_runs[0].pk,
                    "expert": expert.pk,
                    "second": second.pk,
                    "now": now,
                },
            )
            count = c.rowcount
            rubric_ids = sorted(
                {
                    r
                    for (r,) in _rows(
                        c,
                        "SELECT DISTINCT rubric_id FROM grading_calibrationsample WHERE calibration_set_id = %s",
                        [cal.pk],
                    )
                }
            )
        for g in grading_runs:
            Calibration.objects.create(
                calibration_set=cal,
                grading_run=g,
                grader=g.grader,
                prompt=g.prompt,
                rubric_ids=rubric_ids,
            )
    return count


def _rows(cursor, sql, params=None):
    cursor.execute(sql, params)
    return cursor.fetchall()


def check_scores(*, grading_runs, sample: int = 300) -> tuple[int, int, list[str]]:
    """Recompute `sample` stored scores of each run with apps.rubrics.scoring from their
    judgments: (checked, equal, the first differences)."""
    from apps.grading.models import CallState, Judgment, ResponseScore
    from apps.grading.services import breakdown_json
    from apps.rubrics import scoring

    checked = equal = 0
    differences = []
    for g in grading_runs:
        scores = list(ResponseScore.objects.filter(grading_run=g).order_by("?")[:sample])
        by_response = {}
        rows = Judgment.objects.filter(
            grading_run=g, response_id__in=[s.response_id for s in scores]
        ).values_list(
            "response_id",
            "criterion_id",
            "status",
            "met",
            "criterion__polarity",
            "criterion__kind",
            "criterion__points",
        )
        for response_id, *rest in rows:
            by_response.setdefault(response_id, []).append(rest)
        for s in scores:
            judged = by_response[s.response_id]
            assert all(status == CallState.DONE for _c, status, *_r in judged)
            breakdown = scoring.score(
                [
                    scoring.ScoredCriterion(id=c, polarity=p, kind=k, points=pts)
                    for c, _s, _m, p, k, pts in judged
                ],
                {c: m for c, _s, m, *_r in judged},
            )
            checked += 1
            same = (
                breakdown.earned_points == s.earned_points
                and breakdown.max_points == s.max_points
                and breakdown.score == s.score
                and breakdown_json(breakdown) == s.breakdown
            )
            equal += same
            if not same and len(differences) < 3:
                differences.append(
                    f"response {s.response_id}: {breakdown_json(breakdown)} against {s.breakdown}"
                )
    return checked, equal, differences


def data_summary(seeded) -> dict:
    from django.db import connection

    with connection.cursor() as c:

        def one(sql, params=None):
            c.execute(sql, params)
            return c.fetchone()

        out = {}
        out["responses"], out["text_mb"], out["chars_min"], out["chars_max"] = one(
            "SELECT count(*), sum(length(text)) / 1e6, min(length(text)), max(length(text)) "
            "FROM runs_response WHERE run_id = %s",
            [seeded.run.pk],
        )
        out["judgments"], out["errors"], out["met"] = one(
            "SELECT count(*), count(*) FILTER (WHERE status = 'error'), "
            "avg(met::int) FROM grading_judgment"
        )
        out["criteria"], out["criteria_per_rubric"] = one(
            "SELECT count(*), count(*)::float / count(DISTINCT rubric_id) FROM rubrics_criterion"
        )
        out["labelled"], out["questions"] = one(
            "SELECT count(*) FILTER (WHERE label_status = 'verified'), count(*) FROM questions_question"
        )
        out["scores"], out["mean_score"] = one(
            "SELECT count(*), avg(score) FROM grading_responsescore"
        )
        out["per_model"] = _rows(
            c,
            """
            SELECT m.display_name, avg(s.score), avg(length(r.text))::int
            FROM grading_responsescore s JOIN runs_response r ON r.id = s.response_id
            JOIN llm_modelconfig m ON m.id = r.model_id WHERE s.grading_run_id = %s
            GROUP BY m.display_name ORDER BY avg(s.score) DESC""",
            [seeded.grading_runs[0].pk],
        )
        out["per_topic"] = _rows(
            c,
            """
            SELECT t.name, avg(s.score) FROM grading_responsescore s
            JOIN runs_response r ON r.id = s.response_id JOIN questions_question q ON q.id = r.question_id
            JOIN questions_topic t ON t.id = q.topic_id WHERE s.grading_run_id = %s
            GROUP BY t.name ORDER BY avg(s.score) DESC""",
            [seeded.grading_runs[0].pk],
        )
        out["agreement"] = one(
            """
            SELECT avg((a.met = b.met)::int) FROM grading_judgment a JOIN grading_judgment b
            ON b.response_id = a.response_id AND b.criterion_id = a.criterion_id
            WHERE a.grading_run_id = %s AND b.grading_run_id = %s""",
            [seeded.grading_runs[0].pk, seeded.grading_runs[1].pk],
        )[0]
        # The big inserts ran without the foreign keys' triggers: check what they would have.
        out["dangling"] = one("""
            SELECT count(*) FILTER (WHERE r.id IS NULL OR c.id IS NULL OR cc.id IS NULL
                OR c.rubric_id <> j.rubric_id OR cc.response_id <> j.response_id
                OR cc.grading_run_id <> j.grading_run_id)
            FROM grading_judgment j LEFT JOIN runs_response r ON r.id = j.response_id
            LEFT JOIN rubrics_criterion c ON c.id = j.criterion_id
            LEFT JOIN grading_checklistcall cc ON cc.id = j.checklist_id""")[0]
        out["dangling"] += one("""
            SELECT count(*) FROM runs_response r WHERE NOT EXISTS
                (SELECT 1 FROM questions_question q WHERE q.id = r.question_id)
            OR NOT EXISTS (SELECT 1 FROM llm_modelconfig m WHERE m.id = r.model_id)""")[0]
        out["dangling"] += one("""
            SELECT count(*) FROM grading_responsescore s WHERE NOT EXISTS
                (SELECT 1 FROM runs_response r WHERE r.id = s.response_id)""")[0]
        out["db_mb"] = one("SELECT pg_database_size(current_database()) / 2^20")[0]
        out["judgment_mb"] = one("SELECT pg_total_relation_size('grading_judgment') / 2^20")[0]
    return out


# --- the baseline -------------------------------------------------------------------------------


def export_select(researcher) -> tuple[str, list[str]]:
    """The SELECT that the console's CSV action over every judgment compiles to: the
    changelist's queryset, in primary-key order, as `values_list` of `csv_fields`."""
    from django.contrib import admin
    from django.db import connection
    from django.test import RequestFactory

    from apps.grading.models import Judgment

    model_admin = admin.site._registry[Judgment]
    request = RequestFactory().post(ADMIN_URL)
    request.user = researcher
    fields = list(model_admin.csv_fields)
    queryset = model_admin.get_queryset(request).order_by("pk").values_list(*fields)
    sql, params = queryset.query.sql_with_params()
    return connection.ops.compose_sql(sql, params), fields


def api_select() -> str:
    """The plain SELECT of the API's judgment columns (`JUDGMENT_COLUMNS`: no joins) in
    primary-key order, as `Columns.rows` reads them: the API export's baseline."""
    from django.db import connection

    from apps.grading.api import JUDGMENT_COLUMNS
    from apps.grading.models import Judgment

    aliases = {f"_c{i}": e for i, e in enumerate(JUDGMENT_COLUMNS.expressions())}
    queryset = Judgment.objects.order_by("pk").annotate(**aliases).values_list(*aliases)
    sql, params = queryset.query.sql_with_params()
    return connection.ops.compose_sql(sql, params)


def from_tail(sql: str) -> str:
    """What a SELECT over the judgments reads, and in what order: from its FROM on."""
    at = sql.rfind('FROM "grading_judgment"')
    return normal(sql[at:]) if at >= 0 else ""


def conninfo() -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    return (
        f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} dbname={db['NAME']} "
        f"user={db['USER']}" + (f" password={db['PASSWORD']}" if db["PASSWORD"] else "")
    )


def raw_copy(select: str) -> dict:
    """A bare `COPY (select) TO STDOUT (FORMAT csv, HEADER)` through psycopg 3 on a fresh
    connection, every chunk read and counted as the exports' bodies are."""
    import psycopg

    size = lines = 0
    with psycopg.connect(conninfo(), autocommit=True) as conn, conn.cursor() as cur:
        cpu = time.process_time()
        started = time.perf_counter()
        with cur.copy(f"COPY ({select}) TO STDOUT WITH (FORMAT csv, HEADER true)") as copy:
            for data in copy:  # memoryviews of psycopg's buffer
                size += len(data)
                lines += bytes(data).count(b"\n")
        seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "bytes": size,
        "rows": lines - 1,
        "cpu_seconds": time.process_time() - cpu,
    }


# --- the exports and the list, each in a process of its own -------------------------------------


HEAVY = ("sklearn", "scipy", "pandas", "numpy", "matplotlib", "litellm")


def footprint() -> dict:
    """What a fresh process holds before it serves anything: RSS after `django.setup()` and
    after the URLconf is loaded, the heavy libraries then imported, and for each, the
    project's modules through which it was first imported."""
    import builtins
    import traceback

    import django

    chains, original = {}, builtins.__import__

    def noting(name, *args, **kwargs):
        top = name.partition(".")[0]
        if top in HEAVY and top not in chains and top not in sys.modules:
            chains[top] = [
                f"{Path(f.filename).relative_to(ROOT)}:{f.lineno}"
                for f in traceback.extract_stack()[:-1]
                if f.filename.startswith(str(ROOT))
                and "/.venv/" not in f.filename
                and not f.filename.endswith("reports_and_exports.py")
            ]
        return original(name, *args, **kwargs)

    builtins.__import__ = noting
    start = rss_mb()
    django.setup()
    setup = rss_mb()
    from django.urls import resolve

    resolve(ADMIN_URL)
    builtins.__import__ = original
    return {
        "start_mb": start,
        "setup_mb": setup,
        "urls_mb": rss_mb(),
        "heavy": [m for m in HEAVY if m in sys.modules],
        "chains": chains,
    }


def child(opts) -> int:
    """One measurement in this fresh process; prints its result as JSON on the last line."""
    if opts.child == "footprint":
        print(json.dumps(footprint()))
        return 0
    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    from apps.accounts.models import User
    from apps.grading.models import Judgment

    client = Client()
    headers = {}
    if opts.child == "admin-export":
        client.force_login(User.objects.get(username=RESEARCHER))
    else:
        headers["Authorization"] = f"Bearer {os.environ['BENCH_API_KEY']}"
    first = Judgment.objects.order_by("pk").values_list("pk", flat=True).first()
    # A first, small request, as a worker that has served one: the URLconf and every view
    # imported, the session or token read once. Not timed.
    warm = ADMIN_URL + "?o=1" if opts.child == "admin-export" else API_LIST_URL + "?page_size=1"
    assert client.get(warm, headers=headers).status_code == 200, warm
    connection.close()  # the export opens its own, as a request in a fresh worker would
    statements = record_statements()
    before = {"rss_before_mb": rss_mb(), "peak_before_mb": peak_mb()}
    profiler = cProfile.Profile() if opts.profile_rows else None
    if profiler:
        profiler.enable()
    cpu = time.process_time()
    started = time.perf_counter()
    if opts.child == "api-list":
        result = walk_pages(client, opts.url, headers, limit=opts.profile_rows or opts.limit)
    else:
        if opts.child == "admin-export":
            response = client.post(
                opts.url,
                {
                    "action": "export_as_csv",
                    "select_across": "1",
                    "index": "0",
                    "_selected_action": [str(first)],
                },
            )
        else:
            response = client.get(opts.url, headers=headers)
        result = read_body(response, limit=opts.profile_rows)
    result["seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = time.process_time() - cpu
    if profiler:
        profiler.disable()
    result.update(before, peak_mb=peak_mb(), rss_after_mb=rss_mb())
    result["statements"] = statements
    if profiler:
        result["profile"] = profile_text(profiler, sort=opts.profile_sort)
    print(json.dumps(result))
    return 0


def record_statements() -> list[str]:
    """Every statement this process sends through psycopg (the ORM's, a server-side
    cursor's, a COPY run on the raw cursor), as its text before parameters: a list that fills
    as they start. Cheaper than Django's debug cursor, which formats each one in full."""
    import psycopg

    started = []

    def recording(original):
        def method(self, statement, *args, **kwargs):
            started.append(statement if isinstance(statement, str) else str(statement))
            return original(self, statement, *args, **kwargs)

        return method

    for cls, name in (
        (psycopg.Cursor, "execute"),
        (psycopg.ServerCursor, "execute"),
        (psycopg.Cursor, "copy"),
    ):
        setattr(cls, name, recording(getattr(cls, name)))
    return started


def read_body(response, *, limit: int = 0) -> dict:
    out = {
        "status": response.status_code,
        "content_type": response.get("Content-Type", ""),
        "streaming": response.streaming,
        "bytes": 0,
        "lines": 0,
    }
    if not response.streaming:
        out["bytes"] = len(response.content)
        out["body"] = response.content[:500].decode(errors="replace")
        return out
    first = None
    for chunk in response.streaming_content:
        if first is None:
            first = time.perf_counter()
        out["bytes"] += len(chunk)
        out["lines"] += chunk.count(b"\n")
        if limit and out["lines"] > limit:
            break
    response.close()
    out["rows"] = out["lines"] - 1  # the header
    return out


def walk_pages(client, url: str, headers: dict, *, limit: int) -> dict:
    """Follow the list's `next` links from `url` until there are none (or `limit` rows)."""
    out = {"status": None, "bytes": 0, "rows": 0, "pages": 0, "decode_seconds": 0.0}
    while url:
        response = client.get(url, headers=headers)
        out["status"] = response.status_code
        if response.status_code != 200:
            out["body"] = response.content[:500].decode(errors="replace")
            break
        out["bytes"] += len(response.content)
        # The test client's response refers to itself (its `json` is a partial of it), so
        # that each page would wait for a full collection to be freed: a server's does not.
        response.json = None
        t = time.perf_counter()
        page = json.loads(response.content)
        out["decode_seconds"] += time.perf_counter() - t
        out["rows"] += len(page["rows"] if "rows" in page else page["results"])
        out["pages"] += 1
        url = page.get("next")
        if limit and out["rows"] >= limit:
            break
    return out


def list_rates(result: dict) -> tuple[float, float]:
    """A walk's rows per second served (its time less the client's decoding) and decoded."""
    served = result["seconds"] - result.get("decode_seconds", 0.0)
    return result["rows"] / served, result["rows"] / result["seconds"]


def profile_text(profiler, *, sort: str, top: int = 26) -> str:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(top)
    text = out.getvalue()
    text = text[text.find("   ncalls") :] if "   ncalls" in text else text
    return text.replace(str(ROOT) + "/", "").rstrip()


def run_child(
    mode: str, url: str, *, env: dict, limit: int = 0, profile_rows: int = 0, sort: str = "tottime"
) -> dict:
    """Start a measuring process and wait for it; its result, and its peak RSS as wait4
    saw it (the same figure as its own ru_maxrss)."""
    args = [sys.executable, __file__, "--child", mode, "--url", url, "--limit", str(limit)]
    if profile_rows:
        args += ["--profile-rows", str(profile_rows), "--profile-sort", sort]
    # Its log (the sign-in's, say) goes to a file, and into the report only if it failed.
    log = ROOT / "benchmarks" / "output" / f"reports-{mode}.log"
    log.parent.mkdir(exist_ok=True)
    with log.open("w") as err:
        process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True
        )
        out = process.stdout.read()
        _pid, status, usage = os.wait4(process.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    lines = out.strip().splitlines()
    if code != 0 or not lines:
        return {"error": f"exit {code}", "output": (out + log.read_text())[-2000:]}
    result = json.loads(lines[-1])
    result["wait4_peak_mb"] = usage.ru_maxrss / 1024
    return result


# --- what is there yet --------------------------------------------------------------------------


def api_state() -> tuple[bool, str]:
    """Whether the API's judgment list and export are routed, and if not, why not."""
    from django.urls import Resolver404, resolve

    if importlib.util.find_spec("config.api") is None:
        return False, "config/api.py does not exist"
    missing = []
    for url in (API_LIST_URL, API_EXPORT_URL):
        try:
            resolve(url)
        except Resolver404:
            missing.append(url)
    if missing:
        return False, f"no view at {', '.join(missing)}"
    return True, ""


def api_token(user) -> tuple[str | None, str]:
    """A bearer key for `user`, made by the accounts app's service, or why there is none."""
    from apps.accounts import services

    for name in ("api_token_create", "api_key_create", "token_create"):
        make = getattr(services, name, None)
        if make is None:
            continue
        made = make(user=user, name=CLIENT_NAME)
        # A service may return the key, or (token row, key).
        if isinstance(made, tuple):
            key = next((part for part in made if isinstance(part, str)), None)
        else:
            key = made if isinstance(made, str) else getattr(made, "key", None)
        return key, f"apps.accounts.services.{name}"
    return None, "apps.accounts.services has no api_token_create"


def largest_page() -> int:
    """The most rows a page of the judgments list may hold (the API's own constant)."""
    from apps.console import api_pages

    return max(getattr(api_pages, "LONG_MAX_PAGE_SIZE", 0), getattr(api_pages, "MAX_PAGE_SIZE", 0))


def report_state() -> tuple[object | None, str]:
    try:
        module = importlib.import_module("apps.analysis.benchmark")
    except ModuleNotFoundError:
        return None, "apps/analysis/benchmark.py does not exist"
    function = getattr(module, "benchmark_report_for", None)
    if function is None:
        return None, "apps.analysis.benchmark has no benchmark_report_for"
    return function, ""


def force_tables(report) -> tuple[int, int]:
    """Every table of the report, and every figure's table, its rows read (should any be
    computed lazily); no figure is drawn. How many tables, and rows in all."""
    tables = list(report.tables.values())
    tables += [figure.table for figure in report.figures.values()]
    return len(tables), sum(len(list(table.rows)) for table in tables)


def slowest_statements(function, grading_run, *, top: int = 6) -> str:
    """One more computation of the report, the cache cleared, with Django's debug cursor:
    its statements, the slowest first."""
    from django.core.cache import cache
    from django.db import connection

    cache.clear()
    connection.force_debug_cursor = True
    connection.queries_log.clear()
    try:
        function(run=grading_run, pairs=None)
    finally:
        connection.force_debug_cursor = False
    queries = sorted(connection.queries, key=lambda q: -float(q["time"]))
    total = sum(float(q["time"]) for q in queries)
    lines = [f"{len(queries)} statements, {total:.2f} s in all; the slowest:"]
    lines += [f"{float(q['time']):7.3f} s  {normal(q['sql'])[:150]}…" for q in queries[:top]]
    return "\n".join(lines)


def time_report(function, grading_run, repeats: int) -> dict:
    from django.core.cache import cache

    seconds, cpu, tables, table_rows = [], [], 0, 0
    for _ in range(repeats):
        cache.clear()
        c0 = time.process_time()
        started = time.perf_counter()
        report = function(run=grading_run, pairs=None)
        tables, table_rows = force_tables(report)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - c0)
    return {
        "median": statistics.median(seconds),
        "all": seconds,
        "tables": tables,
        "rows": table_rows,
        "cpu": statistics.median(cpu),
    }


def profile_call(func, *, top: int = 22) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    func()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    text = out.getvalue()
    text = text[text.find("   ncalls") :] if "   ncalls" in text else text
    return text.replace(str(ROOT) + "/", "").rstrip()


def main_select(statements: list[str]) -> str:
    """Of the statements a path ran, the one that reads the judgments' rows (the longest
    over grading_judgment), bare: without the COPY around it or the server-side cursor's
    DECLARE before it."""
    reading = [s for s in statements if "grading_judgment" in s and "COUNT(" not in s.upper()[:40]]
    if not reading:
        return ""
    sql = max(reading, key=len).strip()
    sql = re.sub(r'(?is)^DECLARE\s+"?[\w]+"?\s+.*?CURSOR\s+(WITH(OUT)?\s+HOLD\s+)?FOR\s+', "", sql)
    found = re.match(r"(?is)^COPY\s*\((.*)\)\s*TO\s+STDOUT.*$", sql)
    return found.group(1).strip() if found else sql


def normal(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


# --- the run ------------------------------------------------------------------------------------


def inner(opts) -> int:
    import django

    django.setup()
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    n_questions = 40 if opts.quick else opts.questions
    n_models = 6 if opts.quick else opts.models
    lines: list[str] = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    def note(text):
        print(text, file=sys.stderr, flush=True)

    load0 = os.getloadavg()
    began = time.monotonic()
    note(f"seeding {n_questions} questions x {n_models} models x {opts.samples} …")
    seeded = seed(questions=n_questions, models=n_models, samples=opts.samples, note=note)
    summary = data_summary(seeded)
    checked, equal, differences = check_scores(grading_runs=seeded.grading_runs)
    note(
        f"seeded in {seeded.seconds:.0f} s: {summary['judgments']:,} judgments; "
        f"scores checked {equal}/{checked}"
    )
    env = dict(os.environ)
    total_rows = summary["judgments"]

    select, fields = export_select(seeded.researcher)
    # The baseline three times (twice now, once after the exports); the fastest counts.
    copies = [raw_copy(select), raw_copy(select)]
    note(f"raw COPY: {copies[0]}")

    # The console's action: every row selected.
    admin = run_child("admin-export", ADMIN_URL, env=env)
    note(f"console export: { {k: v for k, v in admin.items() if k != 'statements'} }")
    admin_sql = main_select(admin.get("statements", []))

    # The API: its streamed export (every row; per grading run if it asks for one) and its
    # paginated list over one grading run.
    api_ok, api_why = api_state()
    api_export = None
    walks = []  # the paginated list's walks: {size, layout, url, result}
    largest = PAGE_SIZE
    api_export_parts, api_sql, api_how = [], "", ""
    if api_ok:
        key, api_how = api_token(seeded.researcher)
        if key is None:
            api_ok, api_why = False, api_how
        else:
            env_api = dict(env, BENCH_API_KEY=key)
            whole = run_child("api-export", API_EXPORT_URL, env=env_api)
            if whole.get("status") == 400:
                api_export_parts = [
                    run_child("api-export", f"{API_EXPORT_URL}?grading_run={g.pk}", env=env_api)
                    for g in seeded.grading_runs
                ]
            else:
                api_export_parts = [whole]
            api_export = combine(api_export_parts)
            note(f"API export: { {k: v for k, v in api_export.items() if k != 'statements'} }")
            api_sql = main_select(api_export.get("statements", []))
            first_run = seeded.grading_runs[0].pk
            largest = largest_page()
            # The walk the target is judged on first (the largest pages, in the layout the
            # API serves fastest), then the other layout, then both in pages of PAGE_SIZE.
            for size in dict.fromkeys((largest, PAGE_SIZE)):
                for layout in LIST_LAYOUTS:
                    url = f"{API_LIST_URL}?grading_run={first_run}&page_size={size}&layout={layout}"
                    result = run_child("api-list", url, env=env_api, limit=opts.list_rows)
                    walks.append({"size": size, "layout": layout, "url": url, "result": result})
                    shown = {k: v for k, v in result.items() if k != "statements"}
                    note(f"API list, pages of {size:,}, {layout}: {shown}")
    # The API's export reads other columns (no joins): a COPY of its own plain SELECT.
    # Each baseline twice, before and after the other's; the faster is the one compared with.
    api_copy = api_plain = None
    api_copies = []
    if api_export is not None:
        api_plain = api_select()
        api_copies.append(raw_copy(api_plain))
    copies.append(raw_copy(select))
    if api_plain:
        api_copies.append(raw_copy(api_plain))
        api_copy = min(api_copies, key=lambda c: c["seconds"])
    copy = min(copies, key=lambda c: c["seconds"])

    # What a process of the product holds before it serves anything (the exports' RSS
    # is theirs on top of it).
    memory = run_child("footprint", "-", env=env)

    report_function, report_why = report_state()
    reports = {}
    if report_function is not None:
        for g in seeded.grading_runs:
            reports[g.pk] = time_report(report_function, g, REPEATS)
            note(f"report for grading run {g.pk}: {reports[g.pk]}")

    # --- checks, and a profile of whatever missed ---
    rows = []  # (target, measured, ratio, met)
    profiles = {}
    for g in seeded.grading_runs:
        r = reports.get(g.pk)
        label = (
            f"report tables, grading run {g.pk} ({g.grader.display_name}) ≤ {TARGET_REPORT_S:.0f} s"
        )
        if r is None:
            rows.append((label, f"not available: {report_why}", "—", "—"))
            continue
        ok = r["median"] <= TARGET_REPORT_S
        rows.append(
            (
                label,
                f"{r['median']:.2f} s, median of {REPEATS} ({r['tables']} tables, {r['rows']:,} rows; "
                f"each: {', '.join(f'{s:.2f}' for s in r['all'])}; CPU of this process "
                f"{r['cpu']:.2f} s, the rest waiting on PostgreSQL or the machine)",
                f"{r['median'] / TARGET_REPORT_S:.2f} of the target",
                ok,
            )
        )
        # A profile when it misses, or comes within a fifth of missing.
        if r["median"] > 0.8 * TARGET_REPORT_S and "benchmark_report_for" not in profiles:
            from django.core.cache import cache

            cache.clear()
            verdict = "missed" if not ok else "met, within a fifth of it"
            profiles["benchmark_report_for"] = (
                f"The report's tables took {r['median']:.2f} s, {verdict}: where "
                f"`benchmark_report_for` spends its time on grading run {g.pk}, the cache "
                "cleared (cProfile, cumulative):",
                profile_call(lambda g=g: force_tables(report_function(run=g, pairs=None)))
                + "\n\n"
                + slowest_statements(report_function, g),
            )

    def export_rows(name, result, baseline, mode, url):
        if result is None or "error" in result or result.get("status") != 200:
            detail = (result or {}).get("body", "")[:200] or last_line(result)
            rows.append(
                (
                    f"{name} / raw COPY ≤ {TARGET_EXPORT_RATIO:.0f}",
                    f"failed: status {(result or {}).get('status')} {detail}",
                    "—",
                    False,
                )
            )
            return
        ratio = result["seconds"] / baseline["seconds"]
        complete = result["rows"] == total_rows
        rows.append(
            (
                f"{name} / raw COPY ≤ {TARGET_EXPORT_RATIO:.0f}",
                f"{result['seconds']:.1f} s against {baseline['seconds']:.1f} s; "
                f"{result['rows']:,} rows{'' if complete else f' (of {total_rows:,}!)'}",
                f"{ratio:.2f}",
                ratio <= TARGET_EXPORT_RATIO and complete,
            )
        )
        peak = result["peak_mb"]
        rows.append(
            (
                f"{name}: peak RSS ≤ {TARGET_RSS_MB} MB",
                f"{peak:.0f} MB ({result['rss_before_mb']:.0f} MB before the request)",
                f"{peak / TARGET_RSS_MB:.2f} of the target",
                peak <= TARGET_RSS_MB,
            )
        )
        if ratio > TARGET_EXPORT_RATIO:
            sample = run_child(mode, url, env=env_profile, profile_rows=100_000)
            profiles[name] = (
                f"Target missed: where the {name} spends its time (its first 100,000 rows; "
                "cProfile, by own time):",
                sample.get("profile", sample.get("output", "")),
            )

    env_profile = dict(env)
    if api_ok:
        env_profile["BENCH_API_KEY"] = env_api["BENCH_API_KEY"]
    export_rows("console CSV action, every judgment", admin, copy, "admin-export", ADMIN_URL)
    if api_ok:
        export_rows(
            "API streamed export, every judgment",
            api_export,
            api_copy or copy,
            "api-export",
            api_export_parts and API_EXPORT_URL,
        )
        export_ok = api_export.get("status") == 200
        export_rate = api_export["rows"] / api_export["seconds"] if export_ok else 0
        for k, walk in enumerate(walks):
            r, judged = walk["result"], k == 0
            label = (
                f"API paginated list / streamed export, rows/s served ≥ {TARGET_LIST_RATIO}: "
                if judged
                else "the same, "
            ) + f"pages of {walk['size']:,}, layout={walk['layout']}"
            if r.get("status") != 200 or not export_ok:
                detail = "the export failed" if export_ok else r.get("body", "") or last_line(r)
                rows.append((label, f"failed: {detail[:200]}", "—", False if judged else "—"))
                continue
            served, decoded = list_rates(r)
            ratio = served / export_rate
            rows.append(
                (
                    label,
                    f"{served:,.0f} against {export_rate:,.0f} rows/s "
                    f"({r['rows']:,} rows in {r['pages']:,} pages); with the client's "
                    f"json.loads of each page, {decoded:,.0f} rows/s "
                    f"({decoded / export_rate:.2f})",
                    f"{ratio:.2f}",
                    ratio >= TARGET_LIST_RATIO if judged else "— (not the target's)",
                )
            )
            if judged and ratio < TARGET_LIST_RATIO:
                sample = run_child(
                    "api-list", walk["url"], env=env_profile, profile_rows=50_000, sort="cumulative"
                )
                profiles["list"] = (
                    "Target missed: where the API's paginated list spends its time (its first "
                    "50,000 rows; cProfile, cumulative):",
                    sample.get("profile", sample.get("output", "")),
                )
        if not walks:
            rows.append(
                (
                    f"API paginated list / streamed export, rows/s ≥ {TARGET_LIST_RATIO}",
                    "failed: no walk ran",
                    "—",
                    False,
                )
            )
    else:
        for label in (
            f"API streamed export / raw COPY ≤ {TARGET_EXPORT_RATIO:.0f}",
            f"API streamed export: peak RSS ≤ {TARGET_RSS_MB} MB",
            f"API paginated list / streamed export, rows/s ≥ {TARGET_LIST_RATIO}",
        ):
            rows.append((label, f"not available: {api_why}", "—", "—"))
    rows.append(
        (
            "seeded rows refer to rows that exist (judgments' answers, criteria of the "
            "pinned rubric, checklist calls; answers' models and questions; scores' answers)",
            f"{summary['dangling']} dangling",
            "—",
            summary["dangling"] == 0,
        )
    )
    rows.append(
        (
            "stored scores equal apps.rubrics.scoring's on a sample",
            f"{equal}/{checked}",
            "—",
            equal == checked,
        )
    )

    # --- the report ---
    load1 = os.getloadavg()
    size = "Quick" if opts.quick else "Full size"
    cmd = " ".join(["benchmarks/reports_and_exports.py", *sys.argv[2:]]).strip()
    say(f"### {size} — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    say()
    g1, g2 = seeded.grading_runs
    say(
        f"`.venv/bin/python {cmd}`: {summary['questions']} questions in the nine topics "
        f"({summary['labelled']} labelled and verified), rubrics of "
        f"{summary['criteria_per_rubric']:.0f} criteria ({summary['criteria']:,} in all); "
        f"{len(seeded.models)} models in {len({m.family for m in seeded.models})} families x "
        f"{seeded.samples} answers = {summary['responses']:,} answers "
        f"({summary['chars_min']:,} to {summary['chars_max']:,} characters, "
        f"{summary['text_mb']:.0f} MB of text); two checklist grading runs "
        f"({g1.grader.display_name}, {g2.grader.display_name}): {summary['judgments']:,} "
        f"judgments ({summary['errors']:,} errors, {summary['met'] * 100:.0f}% met; the graders "
        f"agree on {summary['agreement'] * 100:.0f}%), {summary['scores']:,} scores (mean "
        f"{summary['mean_score']:.3f}); a calibration set. Seeded set-based in "
        f"{seeded.seconds:.0f} s (not measured); database {summary['db_mb']:,.0f} MB, of which "
        f"judgments {summary['judgment_mb']:,.0f} MB. DEBUG off; every HTTP path through "
        f"Django's test client (in process, no network), each in a fresh process. Machine: "
        f"{os.cpu_count()} cores, PostgreSQL on the same machine; load average {load0[0]:.2f} at "
        f"start, {load1[0]:.2f} at the end (other sessions' work, if any). Whole run "
        f"{(time.monotonic() - began) / 60:.1f} min."
    )
    say()
    say("| target | measured | ratio | met |")
    say("|---|---|---|---|")
    for label, measured, ratio, ok in rows:
        met = ok if isinstance(ok, str) else ("yes" if ok else "**NO**")
        say(f"| {label} | {measured} | {ratio} | {met} |")
    say()
    say(
        "| path | rows | MB | seconds | CPU of the process | rows/s | MB/s | RSS before | peak RSS |"
    )
    say("|---|---|---|---|---|---|---|---|---|")

    def path_row(name, r):
        if not r or "seconds" not in r or r.get("status", 200) != 200:
            return
        rss = (
            (f"{r['rss_before_mb']:.0f} MB", f"{r['peak_mb']:.0f} MB")
            if "peak_mb" in r
            else ("—", "—")
        )
        cpu = f"{r['cpu_seconds']:.1f} s" if "cpu_seconds" in r else "—"
        say(
            f"| {name} | {r['rows']:,} | {r['bytes'] / 1e6:,.0f} | {r['seconds']:.1f} | {cpu} | "
            f"{r['rows'] / r['seconds']:,.0f} | {r['bytes'] / 1e6 / r['seconds']:,.0f} | "
            f"{rss[0]} | {rss[1]} |"
        )

    for k, c in enumerate(copies, 1):
        path_row(
            f"raw `COPY (SELECT …) TO STDOUT (FORMAT csv)` of the console's columns, run {k}"
            f"{' (the baseline: the fastest)' if c is copy else ''}",
            c,
        )
    for k, c in enumerate(api_copies, 1):
        path_row(
            f"raw COPY of the API's columns (`JUDGMENT_COLUMNS`, no joins), run {k}"
            f"{' (its baseline: the faster)' if c is api_copy else ''}",
            c,
        )
    path_row("console: POST “Export selected rows as CSV”, `select_across=1`", admin)
    if api_export:
        parts = (
            f" ({len(api_export_parts)} requests, one per grading run)"
            if len(api_export_parts) > 1
            else ""
        )
        path_row(f"API: GET {API_EXPORT_URL}{parts}", api_export)
    for walk in walks:
        path_row(f"API: GET {walk['url']}, following `next` (decoding each page)", walk["result"])
    say()

    def reads(ran: str, baseline: str, what: str) -> None:
        if not ran:
            say(
                f"{what} ran no statement over grading_judgment that Django's debug cursor "
                "recorded."
            )
            return
        if normal(ran) == normal(baseline):
            say(f"{what} ran the baseline's SELECT itself.")
            return
        tail = "the same" if from_tail(ran) == from_tail(baseline) else "**other**"
        say(
            f"{what} ran another SELECT ({len(ran):,} characters) with {tail} FROM, joins "
            f"and ORDER BY as the baseline's: it begins `{normal(ran)[:160]}…`."
        )

    say(
        f"The console's baseline is the SELECT that `JudgmentAdmin`'s changelist queryset "
        f"compiles to (`values_list` of its {len(fields)} `csv_fields`, in primary-key order), "
        "below; the API's, the plain SELECT of `JUDGMENT_COLUMNS` (no joins) in primary-key "
        "order. What each export ran, as psycopg was handed it in the export's process:"
    )
    say()
    reads(admin_sql, select, "- The console's action")
    if api_export is not None:
        reads(api_sql, api_plain, "- The API's export")
    decoded = [w for w in walks if w["result"].get("decode_seconds")]
    if decoded:
        say()
        say(
            "The paginated list's rate served is its rows over the walk's time less the "
            "client's `json.loads` of each page, which the export's rate has no counterpart of "
            "(its CSV is read, not parsed). Of each walk's time, the decoding took: "
            + "; ".join(
                f"pages of {w['size']:,}, {w['layout']}: "
                f"{w['result']['decode_seconds']:.1f} of {w['result']['seconds']:.1f} s"
                for w in decoded
            )
            + "."
        )
    say()
    say("```sql")
    say(f"COPY ({select}) TO STDOUT WITH (FORMAT csv, HEADER true)")
    say("```")
    if api_plain:
        say()
        say("```sql")
        say(f"COPY ({api_plain}) TO STDOUT WITH (FORMAT csv, HEADER true)")
        say("```")
    say()
    measured = {"the console's export": admin, "the API's export": api_export} | {
        f"the paginated list in pages of {w['size']:,}, {w['layout']}": w["result"] for w in walks
    }
    say(memory_note(memory, {k: r for k, r in measured.items() if r and "peak_mb" in r}))
    say()
    per_model = ", ".join(f"{name} {score:.2f}" for name, score, _chars in summary["per_model"])
    per_topic = ", ".join(f"{name} {score:.2f}" for name, score in summary["per_topic"])
    say(f"Mean score by model, grading run {g1.pk}: {per_model}. By topic: {per_topic}.")
    if differences:
        say()
        say("Scores that differ from apps.rubrics.scoring's: " + "; ".join(differences))
    for heading, text in profiles.values():
        say()
        say(heading)
        say()
        say("```")
        say(text)
        say("```")
    out = ROOT / "benchmarks" / "output"
    out.mkdir(exist_ok=True)
    (out / "reports_and_exports.md").write_text("\n".join(lines) + "\n")
    if not opts.quick and not opts.no_results:
        results_write("\n".join(lines))
    # A row's "met" is True, False, or a dash (and why) where no target is judged.
    return 0 if all(ok is True or str(ok).startswith("—") for *_r, ok in rows) else 1


def memory_note(memory: dict, measured: dict[str, dict]) -> str:
    if "error" in memory:
        return "The memory of a fresh process was not measured: " + last_line(memory)
    heavy = (
        "; ".join(
            f"{name}, through {' → '.join(memory['chains'].get(name, [])) or '?'}"
            for name in memory["heavy"]
        )
        or "none"
    )
    added = "; ".join(
        f"{name} {r['rss_before_mb']:.0f} MB before its request, {r['peak_mb']:.0f} MB at its "
        f"peak ({r['peak_mb'] - r['rss_before_mb']:+.0f} MB)"
        for name, r in measured.items()
    )
    return (
        f"Memory: a fresh process of the product holds {memory['setup_mb']:.0f} MB after "
        f"`django.setup()` and {memory['urls_mb']:.0f} MB once its URLconf is loaded, before it "
        f"serves anything. Of {', '.join(HEAVY)}, it has imported by then: {heavy}. Each "
        f"measuring process (after one small request, untimed): {added}."
    )


def last_line(result: dict | None) -> str:
    """What a measuring process that failed said last (its exit status, and the last line
    of its traceback)."""
    result = result or {}
    said = [line for line in result.get("output", "").splitlines() if line.strip()]
    return f"{result.get('error', '')}: {said[-1].strip() if said else 'no output'}"


def combine(parts: list[dict]) -> dict:
    """Several requests of one path (one per grading run) as one: times and sizes added,
    the highest peak."""
    if len(parts) == 1:
        return parts[0]
    if any("error" in p or p.get("status") != 200 for p in parts):
        return next(p for p in parts if "error" in p or p.get("status") != 200)
    out = dict(parts[0])
    for key in ("seconds", "cpu_seconds", "bytes", "rows", "lines"):
        out[key] = sum(p.get(key, 0) for p in parts)
    out["peak_mb"] = max(p["peak_mb"] for p in parts)
    out["rss_before_mb"] = max(p["rss_before_mb"] for p in parts)
    out["statements"] = [s for p in parts for s in p.get("statements", [])]
    return out


SECTION = "## Reports and exports"
SECTION_INTRO = (
    "`DATABASE_URL=postgres://postgres@127.0.0.1:5432/assay REDIS_URL=redis://127.0.0.1:6379/6 "
    ".venv/bin/python benchmarks/reports_and_exports.py` (450 questions x 18 models x 5 answers, "
    "two grading runs; `--quick` is 40 questions x 6 models). Database assay_bench_reports and "
    "Redis db 6 of its own. Targets (the issue's): the benchmark report's tables in 5 s; "
    "exporting every judgment as CSV (the console's action, the API's streamed export) in at "
    "most 3 x a raw `COPY (...) TO STDOUT` of the same rows in the same run, with peak RSS at "
    "most 200 MB; the API's paginated list at 0.5 or more of the streamed export's rows per "
    "second."
)


def results_write(text: str) -> None:
    """The run, newest first, under SECTION in RESULTS.md (made at the end if missing)."""
    path = ROOT / "benchmarks" / "RESULTS.md"
    current = path.read_text()
    if SECTION not in current:
        current = current.rstrip("\n") + f"\n\n{SECTION}\n\n{SECTION_INTRO}\n"
    head, tail = current.split(SECTION, 1)
    # After the section's introduction, before its earlier runs (and any later section).
    intro_end = tail.find("\n### ")
    next_section = tail.find("\n## ")
    if intro_end < 0 or (0 <= next_section < intro_end):
        intro_end = next_section if next_section >= 0 else len(tail.rstrip("\n"))
    tail = tail[:intro_end].rstrip("\n") + "\n\n" + text + "\n" + tail[intro_end:]
    path.write_text(head + SECTION + tail.rstrip("\n") + "\n")


def outer(opts) -> int:
    """Find (or start) PostgreSQL and Redis, make a database of our own, and run the
    measurements in a child process whose Django settings see it from the start."""
    import psycopg

    from config.stack import Stack

    stack = Stack()
    try:
        stack.start_services()
        db_url = with_db(stack.env["DATABASE_URL"], DB_NAME)
        redis_url = urlunparse(urlparse(stack.env["REDIS_URL"])._replace(path=f"/{REDIS_DB}"))
        env = dict(
            stack.env,
            DATABASE_URL=db_url,
            REDIS_URL=redis_url,
            CELERY_BROKER_URL=redis_url,
            DEBUG="false",
        )
        server = with_db(stack.env["DATABASE_URL"], "postgres").replace(
            "postgres://", "postgresql://", 1
        )
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {DB_NAME}")
        try:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
            )
            return subprocess.call(
                [sys.executable, __file__, "--inner", *sys.argv[1:]], cwd=ROOT, env=env
            )
        finally:
            if not opts.keep_db:
                with psycopg.connect(server, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    finally:
        stack.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=450)
    parser.add_argument("--models", type=int, default=len(MODELS))
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="40 questions x 6 models x 5")
    parser.add_argument(
        "--list-rows",
        type=int,
        default=LIST_ROWS_MAX,
        help="rows of the paginated list to walk (0: every page of a grading run)",
    )
    parser.add_argument("--keep-db", action="store_true", help="leave the database for a look")
    parser.add_argument("--no-results", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--profile-rows", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--profile-sort", default="tottime", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        return child(opts)
    return inner(opts) if opts.inner else outer(opts)


if __name__ == "__main__":
    sys.exit(main())
