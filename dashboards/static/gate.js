// Draws every chart embedded in the page and makes points open their revision.
// A chart's JSON sits in <script type="application/json" data-chart="ID"> next to its <div id="ID">;
// a point's customdata[0] is its revision id (see gate/figures/history.py).
"use strict";

// A trace marked meta.revisions = "shared" ships customdata rows as [revision id, verdict, ...];
// the page's one revision table (gate/figures/revision_table.py) gives back sha, date, message.
function withRevisionDetails(figure, table) {
  for (const trace of figure.data) {
    if (!trace.meta || trace.meta.revisions !== "shared") continue;
    trace.customdata = trace.customdata.map(
      ([id, ...rest]) => [id, ...(table[id] || ["", "", ""]), ...rest]);
  }
  return figure;
}

function drawChart(script, table, config) {
  const div = document.getElementById(script.dataset.chart);
  const figure = withRevisionDetails(JSON.parse(script.textContent), table);
  return Plotly.newPlot(div, figure.data, figure.layout, config).then((gd) => {
    gd.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (point && Array.isArray(point.customdata)) {
        // The page names where a revision's page is (`gate.domain.routes.REVISION_PAGE`).
        window.location.assign(document.body.dataset.revisionPage + encodeURIComponent(point.customdata[0]));
      }
    });
  });
}

function drawCharts() {
  const config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  const tableScript = document.getElementById("revision-table");
  const table = tableScript ? JSON.parse(tableScript.textContent) : {};
  const drawn = [];
  for (const script of document.querySelectorAll("script[data-chart]")) {
    // A chart in a closed <details> has no width yet: draw it when its section is first opened.
    const closed = script.closest("details:not([open])");
    if (closed) {
      closed.addEventListener("toggle", () => drawChart(script, table, config), { once: true });
      continue;
    }
    drawn.push(drawChart(script, table, config));
  }
  // Tests and screenshots wait for this flag.
  Promise.all(drawn).then(() => { document.body.dataset.chartsReady = "true"; });
}

// A revision with jobs still queued or running polls the JSON API and shows their progress.
function followProgress() {
  const head = document.querySelector("[data-live]");
  if (!head) return;
  const timer = setInterval(async () => {
    const response = await fetch(head.dataset.live, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const revision = await response.json();
    for (const job of revision.jobs || []) {
      const state = document.querySelector(`[data-job-state="${job.id}"]`);
      const progress = document.querySelector(`[data-job-progress="${job.id}"]`);
      if (state) { state.textContent = job.state; state.className = "state s-" + job.state; }
      if (progress) progress.textContent = job.progress || "waiting for a worker";
    }
    if (revision.status === "done" || revision.status === "cancelled") { clearInterval(timer); window.location.reload(); }
  }, 2000);
}

document.addEventListener("DOMContentLoaded", () => { drawCharts(); followProgress(); });
