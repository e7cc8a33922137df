# Copyright: (c) 2025, kueueops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes API authentication options shared by every kueueops.aks module.

Option names, aliases and K8S_AUTH_* environment variables are the ones of
kubernetes.core (plugins/doc_fragments/k8s_auth_options.py), so the same
``module_defaults`` and environment work for both collections.
"""


class ModuleDocFragment:

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to an existing Kubernetes config file, or the content of a kubeconfig
        as a dictionary (for example the C(kubeconfig) returned for an AKS cluster).
      - If neither O(kubeconfig) nor O(host) is given, the default kubeconfig
        (C(KUBECONFIG) or C(~/.kube/config)) is used, and inside a pod the
        in-cluster service account.
      - A dictionary is applied in memory; certificate data it contains is written
        only to files readable by the current user, removed when the module exits.
        Tokens, client keys, passwords and auth-provider/exec secrets it holds are
        masked in the module output. Prefer a path when the host logs module
        invocations to syslog.
      - Can also be specified via the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: raw
  context:
    description:
      - The name of a context found in the kubeconfig. Defaults to the kubeconfig's
        current context.
      - Can also be specified via the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example V(https://127.0.0.1:6443).
        Overrides the server of the kubeconfig context when both are given.
      - Can also be specified via the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token used to authenticate with the API.
      - Can also be specified via the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  ca_cert:
    description:
      - Path to a CA certificate used to verify the API server. The full
        certificate chain must be provided to avoid certificate validation errors.
      - Can also be specified via the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ ssl_ca_cert ]
  client_cert:
    description:
      - Path to a client certificate used to authenticate with the API.
      - Can also be specified via the E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [ cert_file ]
  client_key:
    description:
      - Path to the private key of O(client_cert). The path is not a secret; keep
        the file itself readable only by the user that runs Ansible.
      - Can also be specified via the E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [ key_file ]
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Defaults to the
        kubeconfig's setting, which is to verify.
      - Can also be specified via the E(K8S_AUTH_VERIFY_SSL) environment variable.
    type: bool
    aliases: [ verify_ssl ]
  proxy:
    description:
      - URL of an HTTP proxy to use for the connection.
      - This module does not pick up proxy settings such as E(HTTPS_PROXY) from the
        environment.
      - Can also be specified via the E(K8S_AUTH_PROXY) environment variable.
    type: str
  impersonate_user:
    description:
      - Username to impersonate for the operation (C(Impersonate-User) header).
      - Can also be specified via the E(K8S_AUTH_IMPERSONATE_USER) environment variable.
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate for the operation, one C(Impersonate-Group) header each.
        Requires O(impersonate_user).
      - Can also be specified via the E(K8S_AUTH_IMPERSONATE_GROUPS) environment
        variable, comma separated, for example V(group1,group2).
    type: list
    elements: str
requirements:
  - kubernetes >= 29.0.0 (Python library)
notes:
  - To avoid TLS certificate validation errors when O(validate_certs=true), the full
    certificate chain of the API server must be provided via O(ca_cert) or in the
    kubeconfig.
  - The options can be set once for every module of this collection with
    C(module_defaults) and the action group C(group/kueueops.aks.kueue).
"""
