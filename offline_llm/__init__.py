"""Assay's offline LLM provider: a local, OpenAI-compatible HTTP server for tests, the demo
and benchmarks, in place of paid APIs.

    python -m offline_llm --port 8089 [--latency-ms 300 --rate-429 0.05 ...]

Base URL http://127.0.0.1:8089/v1 (litellm: model "openai/offline-terse", api_base that
URL, any api_key). Endpoints: GET /v1/models, POST /v1/chat/completions, POST
/v1/embeddings, GET /v1/stats, POST /v1/stats/reset, GET /v1/offline/parameters, GET and
POST /v1/offline/limit (the hidden limit, `--limit-concurrent`, `--limit-per-minute`), GET
and POST /v1/offline/rubrics (the rubrics whose criteria answers to their questions speak
to: see `rubrics`), and OpenAI's batch API (/v1/files, /v1/batches: see `batches`). Answers
are deterministic per (model, messages, seed) and shaped by the X-Assay-Purpose header (or
the tags in the prompt): see `generate`. Faults (429, 500, hangs, broken JSON) come from the
knobs in `knobs` or, for one request, from the header X-Offline-Faults: 429 | 500 | hang |
malformed | 400.

/v1/embeddings takes OpenAI's request (`model`; `input`, a string or a list of strings;
optional `encoding_format` "float" or "base64", and `dimensions`, default 256) and answers
in OpenAI's shape (`data[i].embedding` in the order of the inputs, `usage`). A vector is a
hashed bag of the text's stemmed words (`embed`), deterministic per (model, text): texts
that share words have a higher cosine than unrelated ones. Any model name is served;
"offline-embed" is the one /v1/models lists. The knobs' latency and faults apply as for
chat (a "malformed" draw gives a normal answer: a vector has no syntax to break).

Every answer says it is offline: the model names begin with "offline-", bodies carry
`"system_fingerprint": "assay-offline"` and responses the header `X-Offline: assay-offline`.

/v1/stats counts chat completions and embeddings requests: `by_status` by the HTTP status
sent, plus "hang" for a request that hung (if its client waits it out, it then gets a normal
answer) and "499" for one whose client hung up first; `faults` counts the faults injected;
`max_in_flight` is the most requests handled at once since the last reset.

An answer to a help question is made of statements that address, miss or violate its
registered rubric's criteria (or, for a question nobody registered, of the banks' advice) and
of statements of presentation, each drawn with the model's propensities (`propensities`: one
table); the grader finds those statements and says what it found in a sentence
(`statements`).

/v1/offline/parameters serves the numbers that shape the answers (the spread of answers'
chances, the survey proxy's, the grader's), each with what it does, and what each model
named by `?model=` (repeatable; the listed models when none is named) makes of them: its
style, its propensities, its grading threshold and error rate, its leniency as a proxy.
Whoever shows this provider's output can record what made it.

This package imports neither Django nor any other part of Assay, so that it runs anywhere
the virtualenv does.
"""
