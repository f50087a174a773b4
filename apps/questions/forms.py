"""Forms of the question bank's setup: the candidate-post and question uploads, and topics.
The console's pages and the researcher's setup pages (views/setup.py) use the same ones."""

from django import forms
from django.utils.text import slugify

from apps.console.uploads import upload_size_validate

from .interchange import MAX_FILE_BYTES
from .models import Topic


class PostFileForm(forms.Form):
    file = forms.FileField(
        label="CSV or JSON Lines file of candidate posts",
        help_text="Columns external_id, subreddit, title, body, created_utc (ISO 8601 with a "
        "timezone, or epoch seconds) and topics (topic names separated by ;). Every post is "
        "imported, or none: a file with any problem is refused whole, with each problem named.",
    )


class QuestionFileForm(forms.Form):
    file = forms.FileField(
        label="assay-questions/1 JSON file",
        help_text="Every question is imported, or none: a file with any problem is refused "
        "whole, with each problem named.",
    )

    def clean_file(self):
        return upload_size_validate(self.cleaned_data["file"], max_bytes=MAX_FILE_BYTES)


class TopicForm(forms.ModelForm):
    class Meta:
        model = Topic
        fields = ["name", "order"]

    def clean_name(self):
        name = " ".join(self.cleaned_data["name"].split())
        if ";" in name:  # the separator of a candidate-post file's topics
            raise forms.ValidationError("A topic's name cannot hold a semicolon (;).")
        if not slugify(name):
            raise forms.ValidationError("Give the topic a name with letters or digits.")
        return name
