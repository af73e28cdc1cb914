// Live progress on the jobs page: each queued or running row asks for its job's state every
// second until the job is done. Our own few lines: no library, nothing loaded from elsewhere.
(function () {
  const rows = Array.from(document.querySelectorAll("tr[data-job]"));
  function done(status) { return status === "completed" || status === "failed"; }
  async function poll(row) {
    while (!done(row.dataset.status)) {
      await new Promise((r) => setTimeout(r, 1000));
      let reply;
      try { reply = await fetch("/ui/jobs/" + encodeURIComponent(row.dataset.job) + "/progress", { credentials: "same-origin" }); }
      catch (e) { continue; }
      if (!reply.ok) return;
      const job = await reply.json();
      row.dataset.status = job.status;
      row.querySelector(".status").textContent = job.status;
      const bar = row.querySelector("progress");
      bar.value = job.progress; bar.textContent = Math.round(job.progress * 100) + "%";
      row.querySelector(".message").textContent = job.error || job.message;
    }
  }
  rows.filter((r) => !done(r.dataset.status)).forEach(poll);
})();
