# only a comment

# another one
