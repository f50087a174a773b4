/* Assay surveys: live character counts under explanation boxes. The page works without it. */
(function () {
  "use strict";
  function update(box) {
    var out = document.getElementById(box.dataset.counter);
    if (out) out.textContent = box.value.length + " / " + box.maxLength + " characters";
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-counter]")) update(event.target);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[data-counter]").forEach(update);
  });
})();
