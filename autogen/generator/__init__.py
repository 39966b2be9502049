"""The generator behind usergpu.autogen: reads real headers with libclang/ctypeslib2 and the C compiler."""
