// Playable frame sequences: each [data-player] holds its frames as <img>
// elements, one shown at a time. Play/Pause is a button (Enter or Space),
// the frame is a range input (arrow keys, Home, End); ArrowLeft and
// ArrowRight also step while the button has focus.
(function () {
  "use strict";
  var players = document.querySelectorAll("[data-player]");
  Array.prototype.forEach.call(players, function (p) {
    var frames = p.querySelectorAll(".screen img");
    var seek = p.querySelector("[data-seek]");
    var btn = p.querySelector("[data-play]");
    var out = p.querySelector("[data-pos]");
    var controls = p.querySelector(".controls");
    var i = 0, timer = null;
    if (!frames.length || !seek || !btn || !out) { return; }
    function show(k) {
      frames[i].hidden = true;
      i = (k + frames.length) % frames.length;
      frames[i].hidden = false;
      seek.value = String(i);
      var text = "step " + frames[i].getAttribute("data-step") + " (frame " + (i + 1) + " of " + frames.length + ")";
      out.textContent = text;
      seek.setAttribute("aria-valuetext", text);
      p.setAttribute("data-frame", String(i));
    }
    function stop() {
      if (timer !== null) { clearInterval(timer); timer = null; }
      btn.textContent = "Play";
      btn.setAttribute("aria-pressed", "false");
    }
    btn.addEventListener("click", function () {
      if (timer !== null) { stop(); return; }
      if (i === frames.length - 1) { show(0); }
      btn.textContent = "Pause";
      btn.setAttribute("aria-pressed", "true");
      timer = setInterval(function () {
        if (i >= frames.length - 1) { stop(); return; }
        show(i + 1);
      }, 150);
    });
    seek.addEventListener("input", function () { stop(); show(Number(seek.value)); });
    btn.addEventListener("keydown", function (e) {
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        stop();
        show(i + (e.key === "ArrowRight" ? 1 : -1));
        e.preventDefault();
      }
    });
    controls.hidden = false;
    show(0);
  });
  document.documentElement.setAttribute("data-players", String(players.length));
})();
