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
  // Forms on live pages (data-guard): a live update never replaces a form the person has
  // changed. Typing marks the form dirty; a form the server gave back with unsaved edits (a
  // refused save, a merge) is marked data-unsaved. A swap into a section holding such a form
  // is refused unless the person's own action in that section asked for it; for the plan,
  // a newer version is announced and compared field by field (the form's review panel).
  function markDirty(event) {
    var form = event.target.form;
    if (form && form.hasAttribute("data-guard")) { form.dataset.dirty = "true"; }
  }
  document.addEventListener("input", markDirty);
  document.addEventListener("change", markDirty);

  function dirtyFormIn(target) {
    if (!target || !target.querySelectorAll) { return null; }
    var forms = [target].concat(Array.prototype.slice.call(target.querySelectorAll("form[data-guard]")));
    for (var i = 0; i < forms.length; i++) {
      var form = forms[i];
      if (form.matches("form[data-guard]") && (form.dataset.dirty === "true" || form.dataset.unsaved === "true")) {
        return form;
      }
    }
    return null;
  }

  function incomingPlan(content) {
    var holder = document.createElement("template");
    if (typeof content === "string") { holder.innerHTML = content; } else if (content) { holder.content.appendChild(content.cloneNode(true)); }
    return holder.content.querySelector("[data-plan-version]");
  }

  function announce(form, content) {
    var review = form.querySelector("[data-review]");
    if (!review) {
      var note = form.querySelector("[data-stale-note]");
      if (note) { note.hidden = false; }
      return;
    }
    var plan = incomingPlan(content);
    var current = form.querySelector("input[name=plan_version]");
    var newer = plan && current && (Number(plan.dataset.planVersion) > Number(current.value) || plan.dataset.editable !== "true");
    if (newer && window.htmx) { window.htmx.trigger(review, "click"); }
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var form = dirtyFormIn(event.detail.target);
    var source = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!form || (source && event.detail.target.contains(source))) { return; }
    event.detail.shouldSwap = false;
    announce(form, event.detail.serverResponse);
  });
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var form = dirtyFormIn(event.detail.target);
    if (!form) { return; }
    event.detail.shouldSwap = false;
    announce(form, event.detail.fragment);
  });
  // The citation panel: on a phone a sheet over the bottom of the screen, opened when a
  // citation's excerpt arrives and closed with its button or Escape.
  function sheet() { return document.getElementById("citation-sheet"); }
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target.id !== "citation-panel" || !sheet()) { return; }
    sheet().classList.add("open");
    event.detail.target.focus({ preventScroll: true });
  });
  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-close-sheet]") && sheet()) { sheet().classList.remove("open"); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && sheet()) { sheet().classList.remove("open"); }
  });
  // A flash that describes a moment ("the plan is being drafted") disappears once the run's
  // status has moved on from the one the page was loaded in.
  // The only such flash is the one raised when a run is created; a run may already be past
  // drafting when its page loads (an in-process worker drafts in a moment), and then the
  // flash describes a moment that is over.
  var loadedStatus = null;
  function removeTransientFlashes() {
    document.querySelectorAll(".messages [data-transient]").forEach(function (el) { el.remove(); });
  }
  function expireFlashes() {
    var header = document.getElementById("run-header");
    if (!header) { return; }
    if (loadedStatus === null) {
      loadedStatus = header.dataset.status;
      if (loadedStatus !== "created" && loadedStatus !== "planning") { removeTransientFlashes(); }
      return;
    }
    if (header.dataset.status !== loadedStatus) { removeTransientFlashes(); }
  }
  document.addEventListener("DOMContentLoaded", expireFlashes);
  ["htmx:afterSettle", "htmx:oobAfterSwap", "htmx:wsAfterMessage"].forEach(function (name) {
    document.addEventListener(name, expireFlashes);
  });

  // Long fields show how much they hold against the limit the server enforces (the field's
  // maxlength, rendered from the same form field). The browser's own maxlength would cut a
  // long paste silently, so with JavaScript the limit is enforced by the counter and the
  // server instead: the whole text stays, and an alert says how much to remove.
  function counterFor(field) {
    var limit = Number(field.getAttribute("maxlength") || field.dataset.maxlength);
    if (!limit) { return; }
    field.dataset.maxlength = String(limit);
    field.removeAttribute("maxlength");
    var counter = document.createElement("span");
    counter.className = "counter hint";
    counter.id = (field.id || field.name) + "-counter";
    var alert = document.createElement("span");
    alert.className = "counter-alert";
    alert.setAttribute("role", "alert");
    field.insertAdjacentElement("afterend", alert);
    field.insertAdjacentElement("afterend", counter);
    field.setAttribute("aria-describedby", ((field.getAttribute("aria-describedby") || "") + " " + counter.id).trim());
    function update() {
      var used = field.value.length;
      counter.textContent = used.toLocaleString("en") + " of " + limit.toLocaleString("en") + " characters";
      var over = used - limit;
      if (over > 0) {
        field.setAttribute("aria-invalid", "true");
        field.dataset.overLimit = "true";
      } else if (field.dataset.overLimit) {
        field.removeAttribute("aria-invalid");
        delete field.dataset.overLimit;
      }
      alert.textContent = over > 0 ? "This text has " + used.toLocaleString("en") + " characters; at most " +
        limit.toLocaleString("en") + " are accepted. Remove " + over.toLocaleString("en") +
        " before submitting — nothing has been cut." : "";
    }
    field.addEventListener("input", update);
    update();
  }
  function enableCounters(root) {
    root.querySelectorAll("textarea[maxlength], textarea[data-maxlength]:not([data-counted])").forEach(function (field) {
      if (field.dataset.counted) { return; }
      field.dataset.counted = "true";
      counterFor(field);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { enableCounters(document); });
  document.addEventListener("htmx:afterSettle", function (event) { enableCounters(event.target); });
  // Ctrl+Enter (Cmd+Enter on a Mac) in a form's text field submits that form, as its first
  // submit button would (the plan form's first one saves a new version).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) { return; }
    var form = event.target.form;
    if (!form || !event.target.matches("textarea, input")) { return; }
    event.preventDefault();
    if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
  });
})();
