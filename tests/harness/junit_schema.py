"""The JUnit XML schema evalrun's JUnit output is validated against (EVALRUN_JUNIT_XSD, provided by .ci/run)."""

from __future__ import annotations

import os

import pytest


def published_junit_schema():  # noqa: ANN201
    """Jenkins' junit-10.xsd, the schema pytest validates its own JUnit output against.

    It ships in pytest's source distribution (testing/example_scripts/junit-10.xsd);
    .ci/run downloads that from the package registry and points EVALRUN_JUNIT_XSD at it.
    """
    xsd = os.environ.get("EVALRUN_JUNIT_XSD")
    if not xsd:
        if os.environ.get("CI"):
            pytest.fail("CI must provide EVALRUN_JUNIT_XSD (see .ci/run)")
        pytest.skip("set EVALRUN_JUNIT_XSD to junit-10.xsd from pytest's sdist (see .ci/run)")
    import xmlschema

    return xmlschema.XMLSchema(xsd)
