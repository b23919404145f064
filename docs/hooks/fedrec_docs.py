"""MkDocs hooks of fedrec's docs site (``hooks:`` in ``mkdocs.yml``); nothing here is committed
output: every build makes it again.

* **Files outside ``docs/``.** The results pages (``results/**/*.md``) and every file of the
  repository that a page links to (``../results/feras/README.md``, a PNG beside a results page,
  a run's ``results.json``) are added to the site under ``repo/`` with their repository paths
  (``repo/results/feras/README.md``), and each page's relative links are rewritten from
  repository paths to site paths. The sources keep links that work on a forge and in an editor;
  MkDocs then checks every rewritten link as it checks its own (``validation:``), so a link to a
  file that does not exist fails ``mkdocs build --strict``. Only linked files are copied, not the
  whole ``results/`` tree (its run folders hold hundreds of JSON files).
* **Options tables.** ``<!-- fedrec-options: ALGORITHM -->``, a line for readers of the source,
  and ``<!-- /fedrec-options -->`` in a method page become the table of that algorithm's options
  (name, type, default, doc), made from its config dataclass by
  :func:`fedrec.config.option_rows`, the rows ``fedrec config show ALGORITHM`` prints.
* **Rendered docstrings.** The docstrings are written for reading as text, with Sphinx roles
  (``:func:`x```); :func:`on_page_content` drops the roles from the rendered pages.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: The site folder that holds the repository's files from outside ``docs/``.
MIRROR = "repo"
#: Pages from outside ``docs/`` that are in the site even when no page links them.
ALWAYS = ("results/**/*.md", "results/*.md")
#: A link: inline or an image (``[text](target)``, ``![alt](target)``) or a reference
#: definition (``[name]: target``); group 2 is the target.
LINKS = (re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))"),
         re.compile(r"^( {0,3}\[[^\]\n]+\]:[ \t]*)(\S+)()", re.MULTILINE))
#: The place of an options table: what stands between the two comments (a line for readers of
#: the source) is replaced.
OPTIONS = re.compile(r"^<!-- fedrec-options: ([\w-]+) -->\n.*?^<!-- /fedrec-options -->$",
                     re.MULTILINE | re.DOTALL)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def _local(target: str) -> str | None:
    """The path part of a relative link target, or None for an external, absolute or in-page
    link."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("/", "#")):
        return None
    return target.split("#", 1)[0]


def _repo_path(src_uri: str) -> Path:
    """The repository file a site page or file was made from."""
    if src_uri.startswith(f"{MIRROR}/"):
        return REPO / src_uri[len(MIRROR) + 1:]
    return DOCS / src_uri


def _site_uri(path: Path) -> str | None:
    """The site path of repository file ``path`` (None outside the repository)."""
    if path.is_relative_to(DOCS):
        return path.relative_to(DOCS).as_posix()
    if path.is_relative_to(REPO):
        return f"{MIRROR}/{path.relative_to(REPO).as_posix()}"
    return None


def _targets(page: Path) -> list[Path]:
    """The existing repository files that page ``page`` links to (outside fenced code)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = []
    for match in (m for link in LINKS for m in link.finditer(text)):
        local = _local(match.group(2))
        if local:
            path = Path(posixpath.normpath((page.parent / local).as_posix()))
            if path.is_file():
                found.append(path)
    return found


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the results pages and every repository file outside ``docs/`` that a page links to,
    following links from the added pages too."""
    queue = [DOCS / f.src_uri for f in files.documentation_pages()]
    queue += [p for pattern in ALWAYS for p in sorted(REPO.glob(pattern))]
    seen: set[Path] = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        uri = _site_uri(path)
        if uri is None:
            continue
        if uri.startswith(f"{MIRROR}/") and files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(path)))
        if path.suffix == ".md":
            queue.extend(_targets(path))
    return files


def _rewrite_link(match: re.Match[str], page: Page) -> str:
    """A link of ``page`` from its repository path to its site path."""
    target = match.group(2)
    local = _local(target)
    if not local:
        return match.group(0)
    source = _repo_path(page.file.src_uri)
    path = Path(posixpath.normpath((source.parent / local).as_posix()))
    uri = _site_uri(path)
    if uri is None:
        return match.group(0)
    fragment = target[len(local):]
    rel = posixpath.relpath(uri, posixpath.dirname(page.file.src_uri) or ".")
    return f"{match.group(1)}{rel}{fragment}{match.group(3)}"


def options_table(algorithm: str) -> str:
    """The markdown table of ``algorithm``'s options, from its config dataclass."""
    from fedrec.algorithms import get_algorithm
    from fedrec.config import option_rows, packaged_dataset_names, presets

    cls = get_algorithm(algorithm).config_cls

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("<", "&lt;")

    lines = [f"Every option of `{algorithm}`, generated from "
             f"`{cls.__module__}.{cls.__qualname__}` when the site is built; "
             f"`fedrec config show {algorithm}` writes the same as a `--config` file, and "
             "`--set NAME=VALUE` sets one.", "",
             "| option | type | default | what it sets |", "|---|---|---|---|"]
    lines += [f"| `{r.name}` | `{cell(r.type)}` | `{cell(r.default)}` | {cell(r.doc)} |"
              for r in option_rows(cls)]
    names = list(presets(algorithm))
    sections = packaged_dataset_names(algorithm)
    lines.append("")
    if names:
        lines.append(f"Presets (`--preset NAME`): {', '.join(f'`{n}`' for n in names)}. ")
    if sections:
        lines.append(f"Packaged settings for {', '.join(f'`{s}`' for s in sections)} "
                     f"(`fedrec config show {algorithm} --dataset NAME` shows them applied).")
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files,
                     **_: Any) -> str:
    """Fill the options tables and turn repository links into site links (outside fenced
    code, where a link is text)."""
    markdown = OPTIONS.sub(lambda m: options_table(m.group(1)), markdown)

    def rewrite(text: str) -> str:
        for link in LINKS:
            text = link.sub(lambda m: _rewrite_link(m, page), text)
        return text

    parts, last = [], 0
    for fence in FENCE.finditer(markdown):
        parts += [rewrite(markdown[last:fence.start()]), fence.group(0)]
        last = fence.end()
    parts.append(rewrite(markdown[last:]))
    return "".join(parts)


#: A Sphinx role before inline code in a rendered docstring (``:func:`x``` renders as
#: ``:func:<code>x</code>``); ``~`` shortens the name to its last part, as Sphinx does.
ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc|const):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if match.group(1) else name}</code>"


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files,
                    **_: Any) -> str:
    """Rendered docstrings (the API reference, the explanations) are written for Sphinx-style
    reading (roles, ``::`` before a literal block): drop the roles and the lone ``::`` that
    Markdown shows as text. Pages without a rendered docstring are left as they are."""
    if 'class="doc ' not in html:
        return html
    html = ROLE.sub(_code, html)
    return html.replace("<p>::</p>", "").replace("::</p>", ":</p>")
