"""Answers written in Markdown, as participants read them.

A model's answer is text from outside Assay: it is shown as HTML it cannot take over.
CommonMark with raw HTML off (markup in an answer is shown as text, escaped), and
markdown-it's own check on every link and image address (javascript:, vbscript:, file: and
data: other than a few image types are refused, and the Markdown shown as text). On top:

- links open in a new tab (the survey stays where it was), tell the other site nothing of
  where they came from, and ask search engines to follow none;
- images are never loaded (an address outside Assay would tell its owner who reads the
  study, and the pages' Content-Security-Policy blocks them anyway): their alt text is shown;
- headings start at the level below the page's own ("The answer" is an h2), in the order
  the answer uses them, so a page's outline stays whole whatever levels a model chose;
- a table scrolls inside its own box rather than making a phone's page scroll sideways.
"""

from functools import lru_cache

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

FIRST_HEADING = 3  # the page has an h1 and an h2 ("The answer") above an answer
LINK_REL = "nofollow noopener noreferrer"


def _image(self, tokens, idx, options, env) -> str:
    alt = self.renderInlineAsText(tokens[idx].children or [], options, env)
    return format_html('<span class="md-image">[image: {}]</span>', alt or "no description")


def _link_close(self, tokens, idx, options, env) -> str:
    return '<span class="visually-hidden"> (opens in a new tab)</span></a>'


def _table_open(self, tokens, idx, options, env) -> str:
    env["tables"] = env.get("tables", 0) + 1
    region = format_html(
        '<div class="table-scroll" tabindex="0" role="region" aria-label="Table {} in {}">',
        env["tables"],
        env["name"],
    )
    return region + self.renderToken(tokens, idx, options, env)


def _table_close(self, tokens, idx, options, env) -> str:
    return self.renderToken(tokens, idx, options, env) + "</div>"


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.add_render_rule("image", _image)
    md.add_render_rule("link_close", _link_close)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    return md


def markdown_html(text: str, *, name: str) -> SafeString:
    """`text` (Markdown) as safe HTML; `name` says what it is ("the answer", "Answer A"),
    for the labels of its tables."""
    md = _parser()
    tokens = md.parse(text)
    levels = sorted({int(t.tag[1]) for t in tokens if t.type == "heading_open"})
    tag = {level: f"h{min(6, FIRST_HEADING + rank)}" for rank, level in enumerate(levels)}
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = tag[int(token.tag[1])]
        for child in token.children or []:
            if child.type == "link_open":
                child.attrSet("rel", LINK_REL)
                child.attrSet("target", "_blank")
    html = md.renderer.render(tokens, md.options, {"name": name})
    return mark_safe(html)  # noqa: S308 -- html off: markdown-it escapes every text it writes
