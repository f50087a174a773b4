"""A model's answer, written in Markdown, as participants see it: formatted, and never able to
run anything, load anything or take the page over."""

import pytest

from apps.surveys.markdown import markdown_html


def html(text: str) -> str:
    return str(markdown_html(text, name="Answer A"))


def test_lists_emphasis_code_and_tables_are_formatted():
    out = html(
        "**Bold** and *slanted* and ~~struck~~ and `code`.\n\n- one\n- two\n\n"
        "| Step | When |\n|---|---|\n| Reset | Now |"
    )
    assert "<strong>Bold</strong>" in out and "<em>slanted</em>" in out
    assert "<s>struck</s>" in out and "<code>code</code>" in out
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in out
    assert (
        '<div class="table-scroll" tabindex="0" role="region" aria-label="Table 1 in Answer A">'
        in out
    )
    assert "<td>Reset</td>" in out


@pytest.mark.parametrize(
    "text,shown",
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<img src=x onerror="alert(1)">', "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"),
        ("Say <b>hi</b>", "Say &lt;b&gt;hi&lt;/b&gt;"),
        ('<a href="https://example.org">x</a>', "&lt;a href=&quot;https://example.org&quot;&gt;"),
        ("<!-- hidden -->", "&lt;!-- hidden --&gt;"),
    ],
)
def test_raw_html_is_shown_as_text(text, shown):
    out = html(text)
    assert shown in out
    assert "<script" not in out and "<img" not in out and "<b>" not in out and "<!--" not in out


@pytest.mark.parametrize(
    "text",
    [
        "[click](javascript:alert(1))",
        "[click](JAVASCRIPT:alert(1))",
        "[click](vbscript:msgbox)",
        "[click](data:text/html;base64,PHNjcmlwdD4=)",
        "<javascript:alert(1)>",
    ],
)
def test_links_to_scripts_and_documents_are_not_links(text):
    out = html(text)
    assert "<a " not in out
    assert "href" not in out


def test_links_open_apart_from_the_survey_and_say_so():
    out = html("See [Have I Been Pwned](https://haveibeenpwned.com/).")
    assert (
        '<a href="https://haveibeenpwned.com/" rel="nofollow noopener noreferrer" '
        'target="_blank">Have I Been Pwned'
        '<span class="visually-hidden"> (opens in a new tab)</span></a>'
    ) in out


@pytest.mark.parametrize(
    "text,alt",
    [
        ("![a *chart*](https://tracker.example/pixel.png)", "a chart"),
        ("![](data:image/png;base64,iVBORw0KGgo=)", "no description"),
        ('![x" onerror="alert(1)](https://example.org/x.png)', "x&quot; onerror=&quot;alert(1)"),
    ],
)
def test_images_are_never_loaded_their_description_is_shown(text, alt):
    out = html(text)
    assert "<img" not in out and "src=" not in out
    assert f'<span class="md-image">[image: {alt}]</span>' in out


def test_headings_start_below_the_pages_own_in_the_answers_order():
    out = html("## Steps\n\ntext\n\n#### Detail\n\n## More")
    assert out.count("<h3>") == 2 and "<h4>Detail</h4>" in out
    assert "<h1>" not in out and "<h2>" not in out
    assert html("# One\n\n###### Six") == "<h3>One</h3>\n<h4>Six</h4>\n"
