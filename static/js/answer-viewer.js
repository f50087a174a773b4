// Keyboard moves in the answer viewer (a grading run's answers, one at a time).
//
// The page works without this script: the list, the pager and the Previous and Next answer
// buttons are plain links, and htmx swaps the viewer in place and pushes each answer's URL.
// The script adds the keys a researcher reading hundreds of answers wants: J or the right
// arrow for the next answer, K or the left arrow for the previous (the up and down arrows
// are left to scroll a long answer). Keys typed into a field are left alone, and a key
// pressed while an answer is on its way is ignored, so that one keypress moves once.
(function () {
  "use strict";
  var busy = false;
  var moved = false;

  function viewer() {
    return document.querySelector("[data-answer-viewer]");
  }

  function typing(target) {
    return target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      target.isContentEditable ||
      (target.tagName === "INPUT" && target.type !== "submit" && target.type !== "button");
  }

  var KEYS = { j: "next", ArrowRight: "next", k: "previous", ArrowLeft: "previous" };

  document.addEventListener("keydown", function (event) {
    var box = viewer();
    if (!box || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    if (typing(event.target)) return;
    var which = KEYS[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (!which) return;
    var link = box.querySelector("[data-answer-" + which + "]");
    if (!link) return;
    event.preventDefault();
    if (!busy) link.click();
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var box = viewer();
    if (!box || !box.contains(event.target)) return;
    busy = true;
    moved = event.target.hasAttribute("data-answer-link");
  });

  document.addEventListener("htmx:afterRequest", function () {
    busy = false;
  });

  // Keep the answer shown in sight in the list's own scrolled box (not the page's).
  function listFollows() {
    var box = viewer();
    var list = box && box.querySelector(".answer-list-scroll");
    var current = list && list.querySelector("[aria-current]");
    if (!current) return;
    var top = current.offsetTop;
    if (top < list.scrollTop || top + current.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = Math.max(0, top - list.clientHeight / 3);
    }
  }

  // After a move the new answer replaces the last: the focus goes to its heading, so that a
  // screen reader reads it and the page starts at its top. A filter changed keeps its focus.
  document.addEventListener("htmx:afterSettle", function () {
    listFollows();
    if (!moved) return;
    moved = false;
    var heading = document.getElementById("answer-heading");
    if (heading) heading.focus();
  });

  document.addEventListener("DOMContentLoaded", listFollows);
})();
