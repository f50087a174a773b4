from django import forms

from .services import API_TOKEN_NAME_MAX


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=API_TOKEN_NAME_MAX,
        help_text="What the token is for, such as “analysis notebook”.",
    )
