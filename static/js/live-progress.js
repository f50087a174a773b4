// Polls that ask only while their page can be seen (an element with data-poll-visible and
// hx-trigger "every Ns, visible-again"): in a hidden tab the poll's request is not made, and
// when the tab is shown again the poll asks at once rather than at its next tick. A trigger
// filter ("every 5s [document.visibilityState === 'visible']") would need eval, which the
// Content-Security-Policy refuses.
(function () {
  "use strict";
  var POLL = "[data-poll-visible]";

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (document.hidden && event.detail.elt.matches(POLL)) event.preventDefault();
  });

  document.addEventListener("visibilitychange", function () {
    if (document.hidden || !window.htmx) return;
    document.querySelectorAll(POLL).forEach(function (elt) {
      window.htmx.trigger(elt, "visible-again");
    });
  });
})();
