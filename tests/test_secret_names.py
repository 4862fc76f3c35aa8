"""The secret-name rule (nbagent.redaction.looks_secret_name) against real environment variables: the
ordinary ones of a machine (PATH, PWD, OLDPWD, HOME…) are not secrets, the keys and passwords are."""

from __future__ import annotations

import os
import re

import pytest

from nbagent.notebook.tools.namespace_view import hidden_reason
from nbagent.redaction import looks_secret_name, scrub

ORDINARY = [
    *("PATH", "PWD", "OLDPWD", "HOME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "COLORTERM"),
    *("USER", "LOGNAME", "HOSTNAME", "SHLVL", "_", "MAIL", "EDITOR", "VISUAL", "PAGER", "LESS"),
    *("TMPDIR", "TZ", "DISPLAY", "WAYLAND_DISPLAY", "LS_COLORS", "PS1", "HISTFILE", "HISTSIZE"),
    *("XDG_RUNTIME_DIR", "XDG_SESSION_ID", "XDG_SESSION_TYPE", "XDG_CONFIG_HOME", "XDG_DATA_DIRS"),
    *("XDG_CURRENT_DESKTOP", "XDG_SESSION_CLASS", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER"),
    *("SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "SSH_ASKPASS"),
    *("GIT_ASKPASS", "VSCODE_GIT_ASKPASS_MAIN", "VSCODE_GIT_ASKPASS_NODE", "GPG_TTY", "GNUPGHOME"),
    *("GNOME_KEYRING_CONTROL", "PASSWORD_STORE_DIR", "PGPASSFILE", "SSL_CERT_FILE", "SSL_CERT_DIR"),
    *("JUPYTER_PATH", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JPY_PARENT_PID"),
    *("JPY_SESSION_NAME", "JUPYTER_SERVER_ROOT", "JUPYTERHUB_API_URL", "JUPYTERHUB_CLIENT_ID"),
    *("JUPYTERHUB_OAUTH_CALLBACK_URL", "JUPYTERHUB_OAUTH_SCOPES", "JUPYTERHUB_COOKIE_OPTIONS"),
    *("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYTHONHASHSEED", "MPLBACKEND"),
    *("PIP_INDEX_URL", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "TOKENIZERS_PARALLELISM", "HF_HOME"),
    *("AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE"),
    *("GOOGLE_CLOUD_PROJECT", "KUBECONFIG", "KRB5CCNAME", "DEBIAN_FRONTEND", "TERM_SESSION_ID"),
    *("SECURITYSESSIONID", "XPC_SERVICE_NAME", "COMMAND_MODE", "__CF_USER_TEXT_ENCODING", "KEYTIMEOUT"),
    *("NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"),
    *("NBAGENT_DB", "OPENAI_API_KEY_ENV", "OPENAI_BASE_URL", "JUPYTER_TOKEN_FILE", "MAX_TOKENS"),
]

SECRET = [
    *("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PGPASSWORD", "MYSQL_PWD", "AWS_SECRET_ACCESS_KEY"),
    *("AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "HF_TOKEN", "JUPYTER_TOKEN"),
    *("JUPYTERHUB_API_TOKEN", "SLACK_BOT_TOKEN", "DATABASE_PASSWORD", "DB_PASS", "REDIS_PASSWORD"),
    *("SECRET_KEY", "SECRET_KEY_BASE", "DJANGO_SECRET_KEY", "CLIENT_SECRET", "NPM_TOKEN", "API_KEY"),
    *("GOOGLE_API_KEY", "STRIPE_SECRET_KEY", "TWINE_PASSWORD", "SENTRY_AUTH_TOKEN", "PASSWD"),
    *("api_key", "dbPassword", "db_pwd", "credentials", "session_cookie", "accessToken"),
]

_UNAMBIGUOUS = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CRED|COOKIE", re.IGNORECASE)


@pytest.mark.parametrize("name", ORDINARY)
def test_an_ordinary_environment_variable_is_not_a_secret(name: str) -> None:
    assert not looks_secret_name(name)


@pytest.mark.parametrize("name", SECRET)
def test_a_key_or_password_variable_is_a_secret(name: str) -> None:
    assert looks_secret_name(name)


def test_no_variable_of_this_machine_is_a_secret_unless_its_name_says_key_token_or_password() -> None:
    flagged = [name for name in os.environ if looks_secret_name(name)]
    assert [name for name in flagged if not _UNAMBIGUOUS.search(name)] == []
    assert not looks_secret_name("PWD") and not looks_secret_name("OLDPWD")


def test_the_working_directory_is_not_scrubbed(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv("OLDPWD", str(tmp_path.parent))
    path = f"{tmp_path}/other.sqlite"
    assert scrub(f"cannot open {path}") == f"cannot open {path}"
    assert hidden_reason("PWD", str(tmp_path)) is None
    assert hidden_reason("pwd", "/data/sales.csv") is None
    monkeypatch.setenv("MYSQL_PWD", "hunter2-long-password")
    assert scrub("login hunter2-long-password") == "login [redacted]"


def test_nbagent_transcript_names_a_missing_file_under_the_working_directory(tmp_path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "PWD": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "nbagent", "transcript", f"{tmp_path}/other.sqlite"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "[redacted]" not in done.stderr
    assert f"{tmp_path}/other.sqlite" in done.stderr
