"""Where upstream data comes from by default: every public URL, written once (light: no imports).

The settings (`pipelines/settings.py`) take these as the defaults of their `MLPERF_*_URL` fields; the
parsers and fetchers use them where no setting is passed.
"""

# MLPerf Training rounds a refresh loads by default, oldest first (and every later round GitHub lists).
DEFAULT_ROUNDS = "v0.5,v0.6,v0.7,v1.0,v1.1,v2.0,v2.1,v3.0,v3.1,v4.0,v4.1,v5.0,v5.1,v6.0"
# A round's results archive: the repository's default branch, whatever its name ({version}: v4.1).
DEFAULT_RESULTS_URL_TEMPLATE = "https://github.com/mlcommons/training_results_{version}/archive/HEAD.tar.gz"
# MLPerf HPC rounds a refresh loads by default, and where a round's archive is ({version}: v3.0).
DEFAULT_HPC_ROUNDS = "v0.7,v1.0,v2.0,v3.0"
DEFAULT_HPC_RESULTS_URL_TEMPLATE = "https://github.com/mlcommons/hpc_results_{version}/archive/HEAD.tar.gz"
# MLPerf Inference rounds (opt-in: their archives hold every detail log, gigabytes each): every published round
# whose layout the parser reads (v4.0 on), and their archive. A refresh left at these defaults also loads every
# later round GitHub lists (commands/refresh.py: with_listed_rounds), as every suite does.
DEFAULT_INFERENCE_ROUNDS = "v4.0,v4.1,v5.0,v5.1"
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
