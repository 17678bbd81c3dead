# wittawatj/kernel-gof's package kgof (https://github.com/wittawatj/kernel-gof), commit
# 039a95ed9d8062e283da6bd051b7161a190b4876, MIT licence: tests/corpus/LICENSE-kgof.
# Changed: its test/ and ex/ (cluster experiments) left out. It imports the `future`
# package's Python 2 helpers: programs/future and programs/past stand in for them.
