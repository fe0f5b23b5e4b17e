"""Where upstream data comes from by default: every public URL, written once (light: no imports).

The settings (`pipelines/settings.py`) take these as the defaults of their `MLPERF_*_URL` fields; the
parsers and fetchers use them where no setting is passed.
"""

# A round's results archive: the repository's default branch, whatever its name ({version}: v4.1).
DEFAULT_RESULTS_URL_TEMPLATE = "https://github.com/mlcommons/training_results_{version}/archive/HEAD.tar.gz"
# Where an MLPerf HPC round's archive is ({version}: v3.0). Each suite's default rounds are in its entry of
# the suite table (lib/mlperf/suites.py).
DEFAULT_HPC_RESULTS_URL_TEMPLATE = "https://github.com/mlcommons/hpc_results_{version}/archive/HEAD.tar.gz"
# Where an MLPerf Inference round's archive is (opt-in: its archives hold every detail log, gigabytes each).
DEFAULT_INFERENCE_RESULTS_URL_TEMPLATE = "https://github.com/mlcommons/inference_results_{version}/archive/HEAD.tar.gz"
# The mlcommons/logging archive at the git ref whose rules scored a round ({ref}).
DEFAULT_RULES_URL_TEMPLATE = "https://github.com/mlcommons/logging/archive/{ref}.tar.gz"
# GitHub's REST API: new rounds are new training_results_vX.Y repositories of the mlcommons organisation, and the
# rules of a round the reviewed table does not list are found among mlcommons/logging's tags.
DEFAULT_GITHUB_API_URL = "https://api.github.com"
# The cloud price lists (their API paths are appended by each fetcher).
DEFAULT_AZURE_URL = "https://prices.azure.com"
DEFAULT_AWS_URL = "https://pricing.us-east-1.amazonaws.com"
DEFAULT_GCP_URL = "https://cloudbilling.googleapis.com"
DEFAULT_OCI_URL = "https://apexapps.oracle.com"
DEFAULT_CATALOG_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
