"""The docs site in a real browser: build against the Thrift server, serve, drive headless Chromium.

Oracles: the dbt project's own files (``models/_overview.md``) and the ``manifest.json``
dbt wrote (descriptions, parent/child maps, exposures), never the page under test.
Screenshots go to ``test-output/docs/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from lakehouse.config import PROJECT_DIR
from lakehouse.services.ports import free_port

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("LAKEHOUSE_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("LAKEHOUSE_CHROMEDRIVER", "/usr/bin/chromedriver"))
SCREENSHOTS = PROJECT_DIR / "test-output" / "docs"
PROJECT = "lakehouse"
FCT_SALES = f"model.{PROJECT}.fct_sales"
EXPOSURE = f"exposure.{PROJECT}.tickit_sales_summary"
#: Resource types drawn in dbt-docs' lineage graph; of the tests only singular ones (no ``test_metadata``).
GRAPH_TYPES = (
    "model", "source", "seed", "snapshot", "exposure", "metric", "semantic_model", "saved_query", "unit_test",
    "analysis",
)

GRAPH_NODES_JS = """
var graph = angular.element(document.body).injector().get('graph');
if (!graph.graph_element) { return null; }
return {orientation: graph.orientation,
        nodes: graph.graph_element.nodes().map(function (n) { return n.id(); })};
"""


def lakehouse(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    code = "import sys; from lakehouse.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)


@pytest.fixture(scope="module")
def docs_env(thrift_server, tmp_path_factory) -> dict[str, str]:
    """``lakehouse docs build`` against the shared Thrift server, in its LAKEHOUSE_HOME."""
    env = {**thrift_server.env, "DBT_TARGET_PATH": str(tmp_path_factory.mktemp("dbt-target")),
           "DBT_LOG_PATH": str(tmp_path_factory.mktemp("dbt-logs"))}
    result = lakehouse(["docs", "build"], env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return env


@pytest.fixture(scope="module")
def manifest(docs_env) -> dict:
    return json.loads((Path(docs_env["LAKEHOUSE_HOME"]) / "docs/site/manifest.json").read_text())


@pytest.fixture(scope="module")
def site_url(docs_env) -> str:
    port = free_port()
    started = lakehouse(["docs", "serve", "--background", "--port", str(port)], docs_env, timeout=60)
    assert started.returncode == 0, started.stderr
    pid_file = Path(docs_env["LAKEHOUSE_HOME"]) / "run/docs.pid"
    assert pid_file.is_file()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        stopped = lakehouse(["docs", "stop"], docs_env, timeout=60)
        assert "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
        assert not pid_file.exists()


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(f"needs Debian chromium + chromium-driver ({CHROMIUM}, {CHROMEDRIVER})")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def page_text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def open_page(driver, url: str, expected_text: str) -> str:
    driver.get(url)
    return wait_for(lambda: (text := page_text(driver)) and expected_text in text and text,
                    what=f"'{expected_text}' on {url}")


def lineage(manifest: dict, unique_id: str) -> set[str]:
    """All ancestors and descendants of ``unique_id`` (and itself) drawn in the graph, per manifest maps."""
    def walk(start: str, edges: dict[str, list[str]]) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), []):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    children = {node: list(kids) for node, kids in manifest["child_map"].items()}
    for test_id, unit_test in manifest.get("unit_tests", {}).items():  # drawn as a child of its model
        tested = f"model.{unit_test['package_name']}.{unit_test['model']}"
        children.setdefault(tested, []).append(test_id)
    related = {unique_id} | walk(unique_id, manifest["parent_map"]) | walk(unique_id, children)
    def drawn(node: str) -> bool:
        kind = node.split(".")[0]
        if kind == "test":
            return "test_metadata" not in manifest["nodes"].get(node, {})
        return kind in GRAPH_TYPES

    return {node for node in related if drawn(node)}


def overview_heading() -> str:
    """The first heading of the project's __overview__ docs block (its source file is the oracle)."""
    for path in sorted((PROJECT_DIR / "models").rglob("*.md")):
        text = path.read_text()
        block = re.search(r"{%\s*docs\s+__overview__\s*%}(.*?){%\s*enddocs\s*%}", text, re.S)
        if block:
            heading = re.search(r"^#+\s+(.+)$", block.group(1), re.M)
            assert heading, f"{path}: the __overview__ block has no heading"
            return heading.group(1).strip().strip("*_`")
    raise AssertionError("no {% docs __overview__ %} block under models/")


def close_graph(driver) -> None:
    """Close the lineage overlay (it stays open across page changes otherwise)."""
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.CSS_SELECTOR, '[ng-click="closeGraph()"]'):
        if button.is_displayed():
            button.click()
            break


def first_sentence(description: str) -> str:
    return re.split(r"(?<=[.;:])\s", " ".join(description.split()), maxsplit=1)[0]


def test_overview_page_shows_the_project_overview(browser, site_url):
    heading = overview_heading()
    text = open_page(browser, site_url + "#!/overview", heading)
    assert "Sources" in text and "Projects" in text  # the navigation tree rendered
    browser.save_screenshot(str(SCREENSHOTS / "overview.png"))


def test_fct_sales_page_and_its_lineage_graph(browser, site_url, manifest):
    from selenium.webdriver.common.by import By

    node = manifest["nodes"][FCT_SALES]
    text = open_page(browser, site_url + f"#!/model/{FCT_SALES}", first_sentence(node["description"]))
    assert "fct_sales" in text
    for column in list(node["columns"])[:5]:
        assert column in text
    browser.save_screenshot(str(SCREENSHOTS / "fct_sales.png"))

    browser.find_element(By.CSS_SELECTOR, '[ng-click="onLauncherClick()"]').click()
    wait_for(lambda: browser.execute_script(GRAPH_NODES_JS), what="the sidebar lineage graph")
    browser.find_element(By.CSS_SELECTOR, '[ng-click="showExpanded()"]').click()
    graph = wait_for(
        lambda: (g := browser.execute_script(GRAPH_NODES_JS)) and g["orientation"] == "fullscreen" and g,
        what="the expanded lineage graph",
    )
    time.sleep(1.5)  # let the layout settle for the screenshot
    browser.save_screenshot(str(SCREENSHOTS / "fct_sales_lineage.png"))
    drawn = set(graph["nodes"])
    close_graph(browser)
    assert drawn == lineage(manifest, FCT_SALES)
    assert f"source.{PROJECT}.ecomm.sale" in drawn  # lineage reaches the bronze source


def test_exposure_page(browser, site_url, manifest):
    close_graph(browser)
    assert EXPOSURE in manifest["exposures"], f"the dbt project defines no exposure {EXPOSURE}"
    exposure = manifest["exposures"][EXPOSURE]
    title = exposure.get("label") or exposure["name"]
    text = open_page(browser, site_url + f"#!/exposure/{EXPOSURE}", title)
    owner = exposure.get("owner") or {}
    for value in (owner.get("name"), owner.get("email")):
        if value:
            assert value in text
    depends_on = [manifest["nodes"][uid]["name"] for uid in exposure["depends_on"]["nodes"] if uid in manifest["nodes"]]
    assert depends_on and all(name in text for name in depends_on)
    assert FCT_SALES in exposure["depends_on"]["nodes"]
    browser.save_screenshot(str(SCREENSHOTS / "exposure_tickit_sales_summary.png"))


def test_static_single_file_site_renders_on_its_own(browser, site_url, docs_env, tmp_path):
    alone = tmp_path / "index.html"  # no manifest.json / catalog.json beside it: all embedded
    shutil.copy(Path(docs_env["LAKEHOUSE_HOME"]) / "docs/site/static_index.html", alone)
    open_page(browser, alone.as_uri() + "#!/overview", overview_heading())
    with urllib.request.urlopen(site_url + "manifest.json") as response:
        assert response.headers["Content-Type"] == "application/json"
    with urllib.request.urlopen(site_url) as response:
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
