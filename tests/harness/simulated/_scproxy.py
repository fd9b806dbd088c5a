"""macOS's system proxy settings module, which urllib imports on darwin: no proxies (simulated macOS)."""


def _get_proxy_settings() -> dict:
    return {"exclude_simple": False, "exceptions": []}


def _get_proxies() -> dict:
    return {}
