"""The default secret policy's names and suffixes (`layerconf.core.secrets.SECRETS`): the keys
that hold credentials by their name alone, whatever program or person named them.

Private to `layerconf.core.secrets`. Changing them changes what a profile ships for its
parser's secret flags: rebuild the bundled profile (``python -m layerconf.profiles._compile``).
"""

from __future__ import annotations

DEFAULT_NAMES = (
    "wandb_key",
    "hf_token",
    "hub_token",
    "api_key",
    "apikey",
    "password",
    "passwd",
    "secret",
    "secret_key",
    "access_token",
    "auth_token",
    "api_token",
    "session_token",
    "refresh_token",
    "oauth_token",
    "private_key",
    "token",
    "bearer_token",
    "github_token",
    "gh_token",
    "gitlab_token",
    "databricks_token",
    "slack_token",
    "npm_token",
    "pypi_token",
    "huggingface_token",
    "hugging_face_hub_token",
    "aws_session_token",
    "aws_secret_access_key",
    "azure_storage_key",
)
DEFAULT_SUFFIXES = (
    "_api_key",
    "_apikey",
    "_secret",
    "_secret_key",
    "_password",
    "_passwd",
    "_access_token",
    "_auth_token",
    "_private_key",
    "_access_key",
    "_hub_token",
    "_api_token",
    "_session_token",
    "_bearer_token",
    "_refresh_token",
    "_oauth_token",
    "_storage_key",
    # The names above that say whose credential they are, as the end of a longer name: a
    # prefixed flag another program's parser reads (``--sglang-hf-token``), an environment
    # variable of one's own (``MY_HF_TOKEN``). A bare ``_token`` or ``_key`` is no suffix
    # (``fim_pad_token``, ``input_key``).
    "_wandb_key",
    "_hf_token",
    "_github_token",
    "_gh_token",
    "_gitlab_token",
    "_databricks_token",
    "_slack_token",
    "_npm_token",
    "_pypi_token",
    "_huggingface_token",
)
