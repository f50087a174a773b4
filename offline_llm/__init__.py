"""Assay's offline LLM provider: a local, OpenAI-compatible HTTP server for tests, the demo
and benchmarks, in place of paid APIs.

    python -m offline_llm --port 8089 [--latency-ms 300 --rate-429 0.05 ...]

Base URL http://127.0.0.1:8089/v1 (litellm: model "openai/offline-terse", api_base that
URL, any api_key). Endpoints: GET /v1/models, POST /v1/chat/completions, GET /v1/stats,
POST /v1/stats/reset, GET /v1/offline/parameters. Answers are deterministic per (model,
messages, seed) and shaped by the X-Assay-Purpose header (or the tags in the prompt): see
`generate`. Faults (429, 500, hangs, broken JSON) come from the knobs in `knobs` or, for one
request, from the header X-Offline-Faults: 429 | 500 | hang | malformed | 400.

/v1/stats counts chat completions: `by_status` by the HTTP status sent, plus "hang" for a
request that hung (if its client waits it out, it then gets a normal answer) and "499" for
one whose client hung up first; `faults` counts the faults injected; `max_in_flight` is the
most requests handled at once since the last reset.

/v1/offline/parameters serves the numbers that shape the answers (the survey proxy's, the
grader's), each with what it does, and what each model named by `?model=` (repeatable; the
listed models when none is named) makes of them: its style, its grading threshold, its
leniency as a proxy. Whoever shows this provider's output can record what made it.

This package imports neither Django nor any other part of Assay, so that it runs anywhere
the virtualenv does.
"""
