// Small enhancements on top of HTMX; every page works without them.
(function () {
  "use strict";

  // Show whether the live-progress WebSocket is connected (the htmx ws extension's events).
  function setLive(state, text) {
    var badge = document.getElementById("live-status");
    if (badge) {
      badge.dataset.state = state;
      badge.textContent = text;
    }
  }
  document.addEventListener("htmx:wsOpen", function () { setLive("open", "Live"); });
  document.addEventListener("htmx:wsClose", function () {
    setLive("closed", "Live updates paused — reconnecting; reload the page if this persists.");
  });

  // "Copy link" buttons name the field they copy in data-copy; they stay hidden without JS.
  function enableCopyButtons(root) {
    root.querySelectorAll("[data-copy]").forEach(function (button) {
      button.hidden = !navigator.clipboard;
    });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) { return; }
    var field = document.querySelector(button.dataset.copy);
    if (field && navigator.clipboard) {
      navigator.clipboard.writeText(field.value).then(function () { button.textContent = "Copied"; });
    }
  });
  document.addEventListener("DOMContentLoaded", function () { enableCopyButtons(document); });
  document.addEventListener("htmx:afterSettle", function (event) { enableCopyButtons(event.target); });

  // Mark the citation whose excerpt is shown in the side panel.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var link = event.detail.elt;
    if (!link.classList || !link.classList.contains("citation")) { return; }
    document.querySelectorAll("a.citation.active").forEach(function (el) { el.classList.remove("active"); });
    link.classList.add("active");
  });
})();
