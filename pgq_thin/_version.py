"""The installed distribution's version, in a leaf module: the modules that announce it (the
worker's registration and metrics, the tracer) import it from here, not from the package
face, which names the whole public API."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pgq-thin")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
