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
      - Several paths can be given joined by C(:) (C(;) on Windows), as in C(KUBECONFIG); each
        must exist. They are merged as C(kubectl) merges them, for the Python client and helm alike;
        the first file that names a cluster, user or context wins for it, and the first file that
        sets C(current-context) gives the default context.
      - If neither O(kubeconfig) nor O(host) is given, the default kubeconfig
        (every path of C(KUBECONFIG) that exists, merged the same way, or C(~/.kube/config)) is used,
        and inside a pod the in-cluster service account.
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
      - Path to a client certificate used to authenticate with the API. Helm gets it (and O(client_key))
        as the certificate of the context's user in a private kubeconfig.
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
      - URL of a proxy to use for the connection to the API server (schemes V(http), V(https),
        V(socks5), V(socks5h)), for example V(http://proxy.example.com:3128).
      - Used by the Python client and by helm (M(kueueops.aks.kueue_helm)), which gets it as the
        C(proxy-url) of the context's cluster in a private kubeconfig (the way C(kubectl) and helm read
        a proxy); chart registries are not reached through it.
      - Overrides a C(proxy-url) of the kubeconfig. Without it, what the client libraries read from the
        environment (E(HTTPS_PROXY), E(NO_PROXY)) applies.
      - Can also be specified via the E(K8S_AUTH_PROXY) environment variable.
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains (V(.example.com) or V(example.com)), C(host:port), IP addresses
        and CIDR ranges, or V(*), that are reached without O(proxy), for example
        V(localhost,.internal.example.com,10.0.0.0/8).
      - Matched once against the API server URL, for the Python client and helm alike.
      - Can also be specified via the E(K8S_AUTH_NO_PROXY) environment variable.
    type: str
  proxy_headers:
    description:
      - Headers for the proxy (urllib3's C(make_headers)), with O(proxy).
      - M(kueueops.aks.kueue_helm) passes O(proxy_headers.proxy_basic_auth) to helm as the user and password
        of the proxy URL and refuses the other two, which helm cannot send.
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - Colon-separated C(username:password) for the C(Proxy-Authorization) header.
          - Can also be specified via the E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) environment variable.
        type: str
      basic_auth:
        description:
          - Colon-separated C(username:password) for an C(Authorization) header sent to the proxy.
          - Can also be specified via the E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) environment variable.
        type: str
      user_agent:
        description:
          - The C(User-Agent) sent to the proxy, for example V(foo/1.0).
          - Can also be specified via the E(K8S_AUTH_PROXY_HEADERS_USER_AGENT) environment variable.
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
  - These options, and only these, can be set once for every module of this collection with
    C(module_defaults) and the action group C(group/kueueops.aks.kueue); every module of the
    collection accepts them. The Azure options have their own group, C(group/kueueops.aks.azure).
"""
