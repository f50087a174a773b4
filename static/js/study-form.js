/* Assay study form: filter the scenario list and tick or clear the scenarios shown.
   Without JavaScript the tools stay hidden and the list is plain checkboxes. */
(function () {
  "use strict";

  function setUp() {
    var tools = document.querySelector("[data-picker-tools]");
    var picker = document.getElementById("scenario-picker");
    if (!tools || !picker) return;
    var filter = tools.querySelector("[data-picker-filter]");
    var count = tools.querySelector("[data-picker-count]");
    var choices = Array.prototype.slice.call(picker.querySelectorAll("[data-picker-text]"));

    function shown() {
      return choices.filter(function (choice) { return !choice.hidden; });
    }

    function update() {
      var ticked = choices.filter(function (c) { return c.querySelector("input").checked; });
      count.textContent = ticked.length + " of " + choices.length + " chosen; " +
        shown().length + " shown";
    }

    filter.addEventListener("input", function () {
      var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      choices.forEach(function (choice) {
        var text = choice.getAttribute("data-picker-text").toLowerCase();
        choice.hidden = !words.every(function (w) { return text.indexOf(w) !== -1; });
      });
      update();
    });

    tools.querySelectorAll("[data-picker-select]").forEach(function (button) {
      button.addEventListener("click", function () {
        var tick = button.getAttribute("data-picker-select") === "all";
        shown().forEach(function (choice) { choice.querySelector("input").checked = tick; });
        update();
      });
    });

    picker.addEventListener("change", update);
    tools.hidden = false;
    update();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
