// collab's page: keep the transcript's end in view. On load the page
// shows the newest messages; a message that arrives while the reader is at
// the end scrolls it into view, and leaves them alone when they have
// scrolled back to read. (A file, not an inline script: see the CSP.)
(function () {
	"use strict";
	var atEnd = true;
	function nearEnd() {
		return window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
	}
	function toEnd() {
		window.scrollTo(0, document.body.scrollHeight);
	}
	document.addEventListener("DOMContentLoaded", toEnd);
	document.addEventListener("htmx:sseBeforeMessage", function () { atEnd = nearEnd(); });
	document.addEventListener("htmx:sseMessage", function () { if (atEnd) { toEnd(); } });
})();
