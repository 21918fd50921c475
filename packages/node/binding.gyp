{
  "targets": [
    {
      "target_name": "corral_file_times",
      "sources": ["native/file-times.c"],
      "conditions": [["OS=='win'", { "type": "none" }]]
    }
  ]
}
