"""Settings read from APP_* environment variables."""
import os
from dataclasses import dataclass


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Settings:
    env: str = "dev"
    workers: int = 2
    max_retries: int = 2
    retry_backoff: float = 0.05
    pool_size: int = 4
    shutdown_grace: float = 5.0


def _num(env, name, default, conv):
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = conv(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a valid {conv.__name__}") from None
    if value < 0:
        raise ConfigError(f"{name} must not be negative")
    return value


def load_settings(environ=None) -> Settings:
    env = os.environ if environ is None else environ
    return Settings(
        env=env.get("APP_ENV", "dev"),
        workers=_num(env, "APP_WORKERS", 2, int),
        max_retries=_num(env, "APP_MAX_RETRIES", 2, int),
        retry_backoff=_num(env, "APP_RETRY_BACKOFF", 0.05, float),
        pool_size=_num(env, "APP_POOL_SIZE", 4, int),
        shutdown_grace=_num(env, "APP_SHUTDOWN_GRACE", 5.0, float),
    )
