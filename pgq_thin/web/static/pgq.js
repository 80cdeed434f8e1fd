// pgq-thin dashboard: the only script, served by the package (no build step, no CDN).
// 1. Elements with data-refresh="URL" data-every="SECONDS" are replaced by the HTML that URL
//    returns, every few seconds, while the tab is visible (the server escapes that HTML).
// 2. Forms and buttons with data-confirm="question" ask before they submit.
// 3. A checkbox .select-all selects every ids checkbox of its table.
(function () {
  "use strict";

  function refresh(el) {
    var url = el.getAttribute("data-refresh");
    var every = Math.max(0.5, parseFloat(el.getAttribute("data-every") || "3")) * 1000;
    function tick() {
      if (document.hidden || el.contains(document.activeElement) && document.activeElement.tagName === "INPUT") {
        return setTimeout(tick, every);
      }
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) {
          if (!r.ok) { throw new Error("HTTP " + r.status); }
          return r.text();
        })
        .then(function (html) {
          el.innerHTML = html;
          el.classList.remove("stale");
          el.setAttribute("data-updated", String(Date.now()));
        })
        .catch(function () { el.classList.add("stale"); })
        .then(function () { setTimeout(tick, every); });
    }
    setTimeout(tick, every);
  }

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var button = ev.submitter;
    var question = (button && button.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { ev.preventDefault(); }
  });

  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (!box.classList || !box.classList.contains("select-all")) { return; }
    var table = box.closest("table");
    table.querySelectorAll('input[name="ids"]').forEach(function (c) { c.checked = box.checked; });
  });

  document.querySelectorAll("[data-refresh]").forEach(refresh);
})();
