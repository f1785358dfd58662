document.addEventListener("DOMContentLoaded", function () {
  document.getElementById("script-output").textContent = "script ran";
});
