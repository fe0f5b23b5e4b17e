"""The native-cloud rule has one Python implementation, read from cloud_providers.csv."""

from pipelines.lib.mlperf.systems import availability_category
from pipelines.lib.prices import clouds


def test_every_fragment_of_the_table_makes_its_submitter_that_cloud():
    table = clouds.submitter_fragments()
    assert {"gcp", "azure", "oci", "aws"} <= set(table)
    for provider, fragments in table.items():
        for fragment in fragments:
            submitter = f"Some {fragment.title()} Team"
            assert provider in clouds.clouds_of_submitter(submitter)
            assert clouds.is_native_cloud(submitter, provider.upper())
            assert clouds.cloud_of_submitter(submitter) in clouds.clouds_of_submitter(submitter)


def test_other_submitters_and_providers_are_not_native():
    assert clouds.clouds_of_submitter("Dell") == [] and clouds.cloud_of_submitter(None) is None
    assert not clouds.is_native_cloud("Google", "aws") and not clouds.is_native_cloud("Google", None)


def test_a_bare_available_is_cloud_only_for_a_cloud_submitter():
    assert availability_category("available", "Google") == "cloud"
    assert availability_category("Available", "Dell") == "on-premise"
    assert availability_category("preview", "Google") == "preview"
