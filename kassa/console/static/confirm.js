// A form's button with data-confirm asks before posting ("Cancel subscription 12?"). Without JavaScript
// the form posts at once: the button's own text already says what it does.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });
})();
