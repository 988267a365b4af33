"""Proving a configuration can run: what ``judge validate`` checks beyond its shape.

* :mod:`~judge.validation.checks` — :func:`check_config` (every finding located),
  :func:`load_checked_config` and :func:`runnable` (a configuration refused on errors);
* :mod:`~judge.validation.templates` — every prompt template compiled and rendered against
  a sample context of its event;
* :mod:`~judge.validation.model_names` — every ``model`` resolved to a provider.
"""

from judge.validation.checks import Finding, check_config, load_checked_config, runnable

__all__ = ["Finding", "check_config", "load_checked_config", "runnable"]
