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

// Threads: a live message that answers a thread whose first message is on
// the page (a top-level item of the transcript) moves into that thread's
// folded replies, which it makes when the thread had none; the count in
// its summary follows, and a question to the reader opens it. Otherwise it stays in place, its "re" link showing
// what it answers.
(function () {
	"use strict";
	function label(n) { return n + (n === 1 ? " reply" : " replies"); }
	function fold(li) {
		var transcript = document.getElementById("transcript");
		var thread = li.getAttribute("data-thread");
		if (!transcript || !thread || li.parentElement !== transcript) { return; }
		var first = document.getElementById("m-" + thread);
		if (!first || first.parentElement !== transcript || first.hasAttribute("data-thread")) { return; }
		var list = document.getElementById("replies-" + thread);
		if (!list) {
			var details = document.createElement("details");
			details.className = "thread";
			details.appendChild(document.createElement("summary"));
			list = document.createElement("ol");
			list.className = "replies";
			list.id = "replies-" + thread;
			details.appendChild(list);
			first.appendChild(details);
		}
		list.appendChild(li);
		if (li.querySelector(".answers")) { list.parentElement.open = true; } // a question to the reader
		var summary = list.parentElement.querySelector("summary");
		if (summary) { summary.textContent = label(list.children.length); }
	}
	document.addEventListener("htmx:load", function (e) {
		var elt = e.detail && e.detail.elt;
		if (elt && elt.matches && elt.matches("li.msg[data-thread]")) { fold(elt); }
	});
})();

// @mention completion in the post box: typing @ offers the agents of the
// box's datalist (the who board's), filtered by what follows the @. Arrow
// keys choose, Enter or Tab takes, Escape closes; a click takes too.
(function () {
	"use strict";
	var box = null, list = null, items = [], active = 0, start = -1;
	var swallow = false; // the key that took an offer inserts nothing

	function close() {
		if (list && list.parentNode) { list.parentNode.removeChild(list); }
		if (box) { box.removeAttribute("aria-activedescendant"); box.setAttribute("aria-expanded", "false"); }
		list = null; items = []; start = -1;
	}
	function names(ta) {
		var dl = document.getElementById(ta.getAttribute("data-mentions"));
		if (!dl) { return []; }
		return Array.prototype.map.call(dl.querySelectorAll("option"), function (o) { return o.value; });
	}
	function mark() {
		items.forEach(function (li, i) { li.setAttribute("aria-selected", i === active ? "true" : "false"); });
		if (items[active]) { box.setAttribute("aria-activedescendant", items[active].id); }
	}
	function take(name) {
		var v = box.value, end = box.selectionStart;
		var text = "@" + name + " ";
		box.value = v.slice(0, start) + text + v.slice(end);
		var at = start + text.length;
		box.setSelectionRange(at, at);
		close();
		box.focus();
	}
	function offer(ta) {
		var caret = ta.selectionStart, before = ta.value.slice(0, caret);
		var m = /(^|\s)@([A-Za-z0-9._-]*)$/.exec(before);
		if (!m) { close(); return; }
		var prefix = m[2].toLowerCase();
		var found = names(ta).filter(function (n) { return n.toLowerCase().indexOf(prefix) === 0; }).slice(0, 8);
		if (found.length === 0) { close(); return; }
		close();
		box = ta;
		start = caret - m[2].length - 1;
		list = document.createElement("ul");
		list.className = "mentions";
		list.id = "post-mention-list";
		list.setAttribute("role", "listbox");
		list.setAttribute("aria-label", "Mention");
		items = found.map(function (n, i) {
			var li = document.createElement("li");
			li.id = "post-mention-" + i;
			li.setAttribute("role", "option");
			li.setAttribute("data-name", n);
			li.textContent = "@" + n;
			li.addEventListener("mousedown", function (e) { e.preventDefault(); take(n); });
			list.appendChild(li);
			return li;
		});
		active = 0;
		ta.setAttribute("aria-controls", list.id);
		ta.setAttribute("aria-expanded", "true");
		ta.parentNode.insertBefore(list, ta.nextSibling);
		mark();
	}
	document.addEventListener("input", function (e) {
		if (e.target.matches && e.target.matches("textarea[data-mentions]")) { offer(e.target); }
	});
	document.addEventListener("keydown", function (e) {
		if (!list || e.target !== box) { return; }
		switch (e.key) {
		case "ArrowDown": active = (active + 1) % items.length; mark(); break;
		case "ArrowUp": active = (active + items.length - 1) % items.length; mark(); break;
		case "Enter": case "Tab": swallow = true; take(items[active].getAttribute("data-name")); break;
		case "Escape": close(); break;
		default: return;
		}
		e.preventDefault();
	});
	document.addEventListener("beforeinput", function (e) {
		if (swallow && e.target === box) { e.preventDefault(); }
		swallow = false;
	});
	document.addEventListener("keyup", function () { swallow = false; });
	document.addEventListener("focusout", function (e) { if (e.target === box) { close(); } });
})();
