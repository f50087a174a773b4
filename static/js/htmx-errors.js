// When the server refuses a request made by HTMX (a 4xx or 5xx that the page does not swap
// in), say so in the page's live region, with the server's own message, instead of leaving
// the control looking as if nothing happened. Pages that swap some refusals themselves
// (the rubric editor's 409 and 422) mark those as no error, so they do not arrive here.
(function () {
  "use strict";
  var GENERIC = "The server could not do that";

  function region() {
    return document.getElementById("request-error");
  }

  function say(text) {
    var box = region();
    if (box) box.textContent = text;
  }

  function messageOf(xhr) {
    var type = xhr.getResponseHeader("Content-Type") || "";
    var body = xhr.responseText || "";
    if (type.indexOf("html") === -1) {
      var plain = body.trim().slice(0, 300);
      return plain || GENERIC + " (error " + xhr.status + ").";
    }
    var page = new DOMParser().parseFromString(body, "text/html");
    var marked = page.querySelector("[data-request-message]");
    if (marked && marked.textContent.trim()) return marked.textContent.trim();
    var heading = page.querySelector("main h1, h1");
    if (heading && heading.textContent.trim()) return heading.textContent.trim() + ".";
    return GENERIC + " (error " + xhr.status + ").";
  }

  // A page may choose to swap some refusals in (the rubric editor's fragments), but a whole
  // error page (403.html, 404.html) is never a fragment of another page: say it instead.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || xhr.status < 400) return;
    if (!/^\s*<!doctype html/i.test(xhr.responseText || "")) return;
    event.detail.shouldSwap = false;
    say(messageOf(xhr));
  });

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr) say(messageOf(xhr));
  });

  document.addEventListener("htmx:sendError", function () {
    say("The server could not be reached. Check your connection and try again.");
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail.xhr;
    if (event.detail.successful && xhr && xhr.status < 400) say("");
  });
})();
