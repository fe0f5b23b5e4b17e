"""Which submitters are clouds: the table behind the native-cloud rule.

`cloud_providers.csv` lists, per price provider, the lower-case fragments of an MLPerf submitter
name that mean "this cloud itself" (Google → gcp, Microsoft/Azure → azure, ...) and the provider's
kind. It is loaded as the seed table `raw_cloud_provider_seed`; the rule itself is written once, in
SQL: the model `int_submitter_cloud` (read by `mart_cost_to_train.is_native_cloud` and
`dim_system.availability_category`).
"""

from __future__ import annotations

from pipelines.lib.io.package_data import package_path

CLOUD_PROVIDERS_CSV = package_path(__package__, "cloud_providers.csv")
