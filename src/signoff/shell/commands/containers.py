"""docker and kubectl: reading state is harmless; running, copying or changing is not.

Access to the Docker daemon is root on the host (``docker run -v /:/mnt``), so
every subcommand that starts, enters or changes a container or image runs code
and is classed ``exec``; ``docker ps``, ``images``, ``logs``, ``inspect`` and
``kubectl get``/``describe``/``logs`` only read.
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, model

I, X, N, U = Kind.INERT, Kind.EXEC, Kind.NETWORK, Kind.UNKNOWN  # noqa: E741


def _acts(kind: Kind, why: str) -> object:
    def finish(state: State) -> None:
        for n in range(len(state.operands)):
            state.set_operand(n, I, "an argument")
        state.parts.append(Part(kind=kind, word=" ".join(state.argv[:2]), index=0, why=why))
    return finish


def _copies(why: str) -> object:
    """``docker cp SRC CONTAINER:DST`` / ``kubectl cp``: a local source is read, a local
    target written; ``name:path`` is inside a container."""
    def finish(state: State) -> None:
        count = len(state.operands)
        for n, index in enumerate(list(state.operands)):
            word = state.parts[index].word
            if ":" in word.split("/", 1)[0] and not word.startswith(("/", ".", "~")):
                state.set_operand(n, I, "a path in a container")
            elif n == count - 1 and count > 1:
                state.set_operand(n, Kind.WRITE, "the local copy it writes", declared=True)
            else:
                state.set_operand(n, Kind.READ, "the local file it copies")
        state.parts.append(Part(kind=X, word=" ".join(state.argv[:2]), index=0, why=why))
    return finish


# Options any subcommand accepts that reach elsewhere: another daemon, cluster or credentials.
_REACH = "host= context= config= kubeconfig= server= token= as= as-group= certificate-authority="
_REACH_KINDS: dict[str, Kind | tuple[Kind, str]] = {
    "host": (N, "talks to another daemon"), "context": (U, "another daemon or cluster"),
    "config": (U, "reads configuration"), "kubeconfig": (U, "reads credentials from FILE"),
    "server": (N, "talks to another cluster"), "token": (U, "credentials"),
    "as": (U, "impersonates a user"), "as-group": (U, "impersonates a group"),
    "certificate-authority": (U, "reads a CA")}


def _reader(name: str) -> Model:
    return model(name, "", _REACH, operand=I, lenient=True, kinds=_REACH_KINDS)


def _runner(name: str, why: str, kind: Kind = X) -> Model:
    return model(name, "", _REACH, operand=I, lenient=True, finish=_acts(kind, why),
                 kinds=_REACH_KINDS)


_DOCKER_READ = ("ps", "images", "version", "info", "inspect", "logs", "history", "top",
                "port", "diff", "search")
_DOCKER_RUN = ("run", "exec", "create", "start", "restart", "cp", "build", "compose",
               "commit", "attach", "buildx", "plugin", "swarm", "service", "stack", "load",
               "import", "save", "export", "rm", "rmi", "kill", "stop", "pause", "unpause",
               "update", "volume", "network", "system", "container", "image", "context",
               "login", "push", "tag", "rename", "wait", "secret", "config", "node", "trust")

DOCKER = model("docker", "H:Dl:v", "host= context= config= debug log-level= tls tlscacert= "
               "tlscert= tlskey= tlsverify help version", posix=True,
               kinds={"H": (N, "talks to another daemon"), "host": (N, "another daemon"),
                      "context": (U, "another daemon"), "config": (U, "reads configuration")},
               subcommands={**{s: _reader(f"docker {s}") for s in _DOCKER_READ},
                            "pull": _runner("docker pull", "downloads an image", N),
                            **{s: _runner(f"docker {s}", "controls containers (root on the "
                                          "host)") for s in _DOCKER_RUN},
                            "cp": model("docker cp", "", _REACH, operand=I, lenient=True,
                                        kinds=_REACH_KINDS,
                                        finish=_copies("copies to or from a container (root "
                                                       "on the host)"))})

_KUBE_READ = ("get", "describe", "logs", "explain", "version", "api-resources",
              "api-versions", "cluster-info", "top", "events", "diff", "auth")
_KUBE_ACT = ("exec", "cp", "run", "apply", "delete", "edit", "port-forward", "proxy",
             "attach", "debug", "create", "patch", "scale", "replace", "expose", "label",
             "annotate", "set", "rollout", "drain", "cordon", "uncordon", "taint", "autoscale",
             "certificate", "plugin", "kustomize", "wait")

def _kube_config(state: State) -> None:
    for n in range(len(state.operands)):
        state.set_operand(n, I, "an argument")
    action = state.parts[state.operands[0]].word if state.operands else "view"
    if action == "view" and "raw" in state.modes:
        state.parts.append(Part(kind=U, word="--raw", index=0, why="prints credentials"))
    elif action not in ("view", "current-context", "get-contexts", "get-clusters",
                        "get-users"):
        state.parts.append(Part(kind=Kind.WRITE, word=f"kubectl config {action}", index=0,
                                value="~/.kube/config", cause="config",
                                why="changes the kubeconfig"))
        state.concern("global_config", "kubectl config changes the user's kubeconfig")


KUBECTL = model("kubectl", "n:s:", "namespace= context= cluster= kubeconfig= server= "
                "token= user= help version", posix=True,
                kinds={"kubeconfig": (U, "reads credentials from FILE"),
                       "s": (N, "talks to another cluster"), "server": (N, "another cluster"),
                       "token": (U, "credentials")},
                subcommands={**{s: _reader(f"kubectl {s}") for s in _KUBE_READ},
                             "config": model("kubectl config", "", _REACH + " raw minify "
                                             "flatten output=", operand=I, lenient=True,
                                             finish=_kube_config,
                                             kinds={**_REACH_KINDS, "raw": Opt(sets="raw")}),
                             **{s: _runner(f"kubectl {s}", "changes or enters the cluster")
                                for s in _KUBE_ACT},
                             "cp": model("kubectl cp", "c:", _REACH + " container= retries= "
                                         "no-preserve", operand=I, lenient=True,
                                         kinds=_REACH_KINDS,
                                         finish=_copies("copies to or from a pod"))})

MODELS: list[Model] = [DOCKER, KUBECTL]
