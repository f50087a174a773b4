// The rubric editor's one piece of script.
//
// Every HTMX save carries the draft revision this page last saw (the etag in
// #rubric-revision, refreshed by each successful save), not the one rendered into its form,
// so a page's own saves never conflict with each other while a save made elsewhere in
// between is detected by the server and refused (409).
//
// After a refusal the page holds text the draft no longer has, so editing pauses (the list
// and the add form become inert and autosaves are not sent) until the person chooses in the
// conflict panel; its form (data-keep-revision) carries the revision the server named.
//
// The status line speaks for the whole page: the server answers for one request, so while
// any row (or the add form) still shows why its change was refused, the line counts those
// changes instead of saying that everything was saved.
(function () {
  var PAUSED = ["criteria-list", "add-criterion"];

  // Refusals carry fragments too: 403 (not yours), 409 (conflict) and 422 (invalid) are
  // swapped, not dropped. Set here rather than in a <meta name="htmx-config">: htmx reads
  // only the first such tag on a page, and the base layout has its own (partials/htmx.html).
  if (window.htmx) {
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      { code: "403", swap: true, error: false },
      { code: "409", swap: true, error: false },
      { code: "422", swap: true, error: false },
      { code: "[45]..", swap: false, error: true },
    ];
  }

  function editor() {
    return document.getElementById("rubric-editor");
  }

  function pause(on) {
    var root = editor();
    if (!root) return;
    root.toggleAttribute("data-conflict", on);
    PAUSED.forEach(function (id) {
      var element = document.getElementById(id);
      if (element) element.inert = on;
    });
  }

  function revisionForm(element) {
    var form = element && element.closest ? element.closest("form") : null;
    return form && form.querySelector('input[name="revision"]') ? form : null;
  }

  document.addEventListener("htmx:configRequest", function (event) {
    var form = revisionForm(event.detail.elt);
    var etag = document.getElementById("rubric-revision");
    if (!form || !etag || form.hasAttribute("data-keep-revision")) return;
    if (editor() && editor().hasAttribute("data-conflict")) {
      event.preventDefault(); // paused: this page's copy is out of date
      return;
    }
    event.detail.parameters["revision"] = etag.value;
  });

  function refusals() {
    var reasons = [];
    document.querySelectorAll("#criteria-list .field-errors").forEach(function (box) {
      var messages = Array.prototype.map.call(box.querySelectorAll(".error"), function (p) {
        return p.textContent.trim();
      });
      if (!messages.length) return;
      var row = box.closest("li");
      var label = row ? row.querySelector("label[for^='text-']") : null;
      var name = label ? label.textContent.replace(/\s*text\s*$/, "").trim() : "A criterion";
      reasons.push(name + ": " + messages.join(" "));
    });
    var add = document.querySelectorAll("#add-criterion .error[data-field]");
    if (add.length) {
      reasons.push("New criterion: " + Array.prototype.map.call(add, function (p) {
        return p.textContent.trim();
      }).join(" "));
    }
    return reasons;
  }

  function tellStatus() {
    var status = document.getElementById("save-status");
    var reasons = refusals();
    if (!status || !reasons.length) return;
    var count = reasons.length === 1 ? "1 change" : reasons.length + " changes";
    status.textContent = count + " not saved: " + reasons.join("; ");
    status.classList.add("error");
  }

  // Criteria up to 1,000 characters: a box grows with its text (where CSS cannot size it).
  var SIZES_ITSELF = window.CSS && CSS.supports && CSS.supports("field-sizing", "content");

  function autosize(box) {
    if (SIZES_ITSELF) return;
    box.style.height = "auto";
    box.style.height = box.scrollHeight + 2 + "px";
  }

  function autosizeAll(root) {
    (root || document).querySelectorAll("textarea[data-autosize]").forEach(autosize);
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-autosize]")) {
      autosize(event.target);
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    autosizeAll();
    tellStatus();
  });
  document.addEventListener("htmx:afterSettle", function () {
    autosizeAll();
    tellStatus();
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    tellStatus(); // out-of-band fragments are in place by now; settling comes later
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 409) {
      pause(true);
      var panel = document.getElementById("conflict");
      if (panel) panel.focus();
    } else if (status >= 200 && status < 300) {
      // The element that asked (detail.elt may be an ancestor once the form was swapped out).
      var config = event.detail.requestConfig;
      var form = revisionForm((config && config.elt) || event.detail.elt);
      if (form && form.hasAttribute("data-keep-revision")) pause(false);
    }
  });
})();
