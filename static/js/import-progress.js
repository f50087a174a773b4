// The candidate-post upload form: sends the file with XMLHttpRequest so that the page can
// show how much of it has been uploaded (a file of millions of posts takes a while), then
// goes where the server sent it (the import's progress page). Without this script the form
// posts as usual.
(function () {
  "use strict";

  function start(form) {
    var status = document.getElementById("upload-status");
    var bar = document.getElementById("upload-progress");
    var percent = document.getElementById("upload-percent");
    var button = form.querySelector("[type=submit]");

    form.addEventListener("submit", function (event) {
      if (!window.FormData) return;
      event.preventDefault();
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action || window.location.href);
      xhr.upload.addEventListener("progress", function (e) {
        if (!e.lengthComputable) return;
        var share = Math.round((100 * e.loaded) / e.total);
        bar.value = share;
        bar.textContent = share + "%";
        percent.textContent = share + "% uploaded";
      });
      xhr.addEventListener("load", function () {
        var page = new DOMParser().parseFromString(xhr.responseText, "text/html");
        var again = page.getElementById("post-upload-errors");
        if (again && xhr.responseURL === form.action) {
          // The form came back with its errors: show them, keep this page.
          document.getElementById("post-upload-errors").replaceWith(again);
          status.hidden = true;
          button.disabled = false;
          return;
        }
        window.location.assign(xhr.responseURL || window.location.href);
      });
      xhr.addEventListener("error", function () {
        percent.textContent = "The upload failed; try again.";
        button.disabled = false;
      });
      status.hidden = false;
      button.disabled = true;
      xhr.send(new FormData(form));
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("form[data-upload-progress]");
    if (form) start(form);
  });
})();
