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
(function () {
  var PAUSED = ["criteria-list", "add-criterion"];

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

  document.addEventListener("htmx:afterRequest", function (event) {
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
